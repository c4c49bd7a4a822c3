package app

import (
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/sched"
)

// ApplySchedPolicy gives every thread of the process cfg's sched-policy
// (package sched says what batch buys and costs) and reports what the
// system refused: on Linux, a seccomp profile that forbids sched_setattr
// (Docker's default allows it); elsewhere, batch, which only Linux has.
// CONFIG SET sched-policy calls it, and refuses the change if it fails.
func ApplySchedPolicy(cfg config.Config, log *zap.Logger) error {
	n, err := applySched(sched.Policy(cfg.SchedPolicy))
	if err != nil {
		return err
	}
	log.Debug("scheduling policy", zap.String("sched-policy", cfg.SchedPolicy), zap.Int("threads changed", n))
	return nil
}

// applySched is sched.Apply; tests make it fail.
var applySched = sched.Apply

// StartSchedPolicy is ApplySchedPolicy at startup. normal, the default,
// leaves the threads as the process was started (the kernel's default
// policy, unless under chrt); a refusal of batch is a warning, and the
// server runs on with the policy it has.
func StartSchedPolicy(cfg config.Config, log *zap.Logger) {
	if cfg.SchedPolicy == string(sched.Normal) {
		return
	}
	if err := ApplySchedPolicy(cfg, log); err != nil {
		log.Warn("could not set the threads' scheduling policy; they keep the one they had",
			zap.String("sched-policy", cfg.SchedPolicy), zap.Error(err))
	}
}
