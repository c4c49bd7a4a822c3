package app

import (
	"time"

	"strings"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/resp"
)

// Config is the configuration in force: the one New was given, with the
// changes CONFIG SET made since.
func (a *App) Config() config.Config {
	a.cfgMu.Lock()
	defer a.cfgMu.Unlock()
	return a.cfg
}

// UseLogLevel hands CONFIG SET loglevel the level of the logger New was
// given (see NewLogger). Without it, loglevel changes only what CONFIG GET
// shows.
func (a *App) UseLogLevel(lvl zap.AtomicLevel) {
	a.cfgMu.Lock()
	defer a.cfgMu.Unlock()
	a.level = &lvl
}

// SetConfig is CONFIG SET: it applies the (directive, value) pairs, all of
// them or none (config.Config.WithSet checks them all first), to the
// parts of the server they concern. What each change affects:
//
//   - requirepass: new connections, and every AUTH from now on; clients
//     that authenticated stay so (as in Redis); "" lets everyone in.
//   - timeout: every connection, an idle one from the moment of the change.
//   - maxclients, protected-mode: connections accepted from now on.
//   - client-output-buffer-limit: the pubsub class, every subscriber
//     from its next message; the normal class, every monitor from its
//     next line.
//   - proto-max-bulk-len, client-query-buffer-limit: every connection,
//     from its next argument.
//   - loglevel: the log at once; min-free-disk: the store's next write.
//   - procs: the whole process at once (GOMAXPROCS; ApplyProcs).
//   - sched-policy: every thread of the process at once (ApplySchedPolicy);
//     if the system refuses it, nothing of the CONFIG SET changes.
func (a *App) SetConfig(pairs [][2]string) error {
	a.cfgMu.Lock()
	defer a.cfgMu.Unlock()
	next, err := a.cfg.WithSet(pairs)
	if err != nil {
		return err
	}
	old := a.cfg
	var changed []string
	note := func(name string, differs bool) bool {
		if differs {
			changed = append(changed, name)
		}
		return differs
	}
	// Applied even when the value is the same: at startup normal leaves
	// the threads as the process was started (chrt), and CONFIG SET
	// sched-policy normal is how to give them the default back.
	if note("sched-policy", next.SchedPolicy != old.SchedPolicy) || names(pairs, "sched-policy") {
		if err := ApplySchedPolicy(next, a.log); err != nil {
			// As Redis when applying a setting fails: the old value
			// back, and the change refused. First of all, so that
			// nothing else has changed: all the pairs or none.
			_ = ApplySchedPolicy(old, a.log)
			return config.ApplyFailed("sched-policy", err)
		}
	}
	if note("requirepass", next.RequirePass != old.RequirePass) {
		// The wire first: a connection accepted in between must AUTH
		// (or, when the password goes, is let in) either way.
		a.Wire.SetRequirePass(next.RequirePass != "")
		a.Commands.SetRequirePass(next.RequirePass)
		if a.Proxy != nil {
			a.Proxy.SetRequirePass(next.RequirePass)
		}
	}
	if note("timeout", next.Timeout != old.Timeout) {
		a.Wire.SetIdleTimeout(next.IdleTimeout())
	}
	if note("maxclients", next.MaxClients != old.MaxClients) {
		a.Wire.SetMaxClients(next.MaxClients)
	}
	if note("protected-mode", next.ProtectedMode != old.ProtectedMode) {
		a.Wire.SetProtectedMode(next.ProtectedMode)
	}
	bulk := note("proto-max-bulk-len", next.ProtoMaxBulkLen != old.ProtoMaxBulkLen)
	query := note("client-query-buffer-limit", next.ClientQueryBufferLimit != old.ClientQueryBufferLimit)
	if bulk || query {
		a.Wire.SetLimits(resp.Limits{MaxBulkLen: next.ProtoMaxBulkLen, QueryBufferLimit: next.ClientQueryBufferLimit})
		a.Commands.SetProtoMaxBulkLen(next.ProtoMaxBulkLen)
	}
	if note("client-output-buffer-limit", next.ClientOutputBufferLimit != old.ClientOutputBufferLimit) {
		a.Wire.SetPubsubLimit(PubsubLimit(next))
		a.Wire.SetNormalLimit(NormalLimit(next))
	}
	if note("min-free-disk", next.MinFreeDisk != old.MinFreeDisk) && a.Store != nil {
		a.Store.SetMinFreeDisk(next.MinFreeDisk)
	}
	entries := note("hash-max-listpack-entries", next.HashMaxListpackEntries != old.HashMaxListpackEntries)
	if note("hash-max-listpack-value", next.HashMaxListpackValue != old.HashMaxListpackValue) || entries {
		a.Commands.SetHashLimits(next.HashMaxListpackEntries, next.HashMaxListpackValue)
	}
	zentries := note("zset-max-listpack-entries", next.ZsetMaxListpackEntries != old.ZsetMaxListpackEntries)
	if note("zset-max-listpack-value", next.ZsetMaxListpackValue != old.ZsetMaxListpackValue) || zentries {
		a.Commands.SetZsetLimits(next.ZsetMaxListpackEntries, next.ZsetMaxListpackValue)
	}
	slower := note("slowlog-log-slower-than", next.SlowlogLogSlowerThan != old.SlowlogLogSlowerThan)
	if note("slowlog-max-len", next.SlowlogMaxLen != old.SlowlogMaxLen) || slower {
		a.Commands.SetSlowlog(next.SlowlogLogSlowerThan, next.SlowlogMaxLen)
	}
	if note("set-max-intset-entries", next.SetMaxIntsetEntries != old.SetMaxIntsetEntries) {
		a.Commands.SetMaxIntsetEntries(next.SetMaxIntsetEntries)
	}
	busy := note("busy-reply-threshold", next.BusyReplyThreshold != old.BusyReplyThreshold)
	if busy {
		a.Commands.SetBusyReplyThreshold(time.Duration(next.BusyReplyThreshold) * time.Millisecond)
	}
	if note("loglevel", next.LogLevel != old.LogLevel) && a.level != nil {
		a.level.SetLevel(zapLevel(next.LogLevel))
	}
	if note("procs", next.Procs != old.Procs) {
		ApplyProcs(next, a.log)
	}
	a.cfg = next
	if len(changed) > 0 {
		// Names only: a value may be a password.
		a.log.Info("CONFIG SET changed the configuration", zap.String("directives", strings.Join(changed, " ")))
	}
	return nil
}

// rewriteConfigFunc is CONFIG REWRITE for a server started with cfg: nil
// (no config file) or RewriteConfig.
func (a *App) rewriteConfigFunc(cfg config.Config) func() error {
	if cfg.ConfigFile == "" {
		return nil
	}
	return a.RewriteConfig
}

// RewriteConfig is CONFIG REWRITE: it rewrites the config file the server
// was started with to hold the configuration in force, the changes of
// the environment, the flags and CONFIG SET included (config.RewriteFile
// has Redis's rules), or leaves it as it was and returns why.
func (a *App) RewriteConfig() error {
	a.rewriteMu.Lock()
	defer a.rewriteMu.Unlock()
	cfg := a.Config()
	if err := config.RewriteFile(cfg); err != nil {
		a.log.Warn("CONFIG REWRITE failed", zap.String("file", cfg.ConfigFile), zap.Error(err))
		return err
	}
	a.log.Info("CONFIG REWRITE executed with success", zap.String("file", cfg.ConfigFile))
	return nil
}

// names reports whether pairs set directive name (in any case).
func names(pairs [][2]string, name string) bool {
	for _, p := range pairs {
		if strings.EqualFold(p[0], name) {
			return true
		}
	}
	return false
}
