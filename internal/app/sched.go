package app

import (
	"errors"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/sched"
)

// ApplySchedPolicy gives every thread of the process cfg's sched-policy
// (package sched says what batch buys and costs). A system that refuses
// (a container whose seccomp profile forbids sched_setattr) leaves the
// threads as they are, with a warning: the server works the same, only
// slower where its clients share its CPUs. CONFIG SET sched-policy calls
// it again.
func ApplySchedPolicy(cfg config.Config, log *zap.Logger) {
	n, err := sched.Apply(sched.Policy(cfg.SchedPolicy))
	switch {
	case errors.Is(err, sched.ErrUnsupported):
		log.Debug("no batch scheduling policy on this system; the threads keep the default")
	case err != nil:
		log.Warn("could not set the threads' scheduling policy; they keep the system's",
			zap.String("sched-policy", cfg.SchedPolicy), zap.Error(err))
	default:
		log.Debug("scheduling policy", zap.String("sched-policy", cfg.SchedPolicy), zap.Int("threads changed", n))
	}
}
