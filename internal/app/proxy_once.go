package app

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/proxy"
	"github.com/oncekv/oncekv/proxy/onceup"
)

// wireOnce builds the ONCE engine of proxy mode (package proxy/onceup,
// over a go-redis client of the upstream), hands it to the proxy, and
// registers the ONCE commands in the local table, so that COMMAND
// describes them as the embedded server does.
func (a *App) wireOnce(up proxy.Upstream, cfg config.Config) error {
	client := up.Client()
	oc := onceup.Config{
		DefaultLease: cfg.OnceLease,
		WaitReplicas: cfg.OnceWaitReplicas,
		Logger:       a.log.Named("once"),
	}
	if up.Mode == proxy.Sentinel {
		// The subscription connections follow the master the proxy's
		// own sentinel resolution names.
		oc.MasterAddr = a.Proxy.MasterAddr
	}
	e := onceup.New(client, oc)
	a.onceUp = &onceUp{Engine: e, client: client}
	a.Proxy.SetOnce(e)
	t := a.Commands.Table()
	for _, spec := range onceup.Commands {
		t.Register(&commands.Command{
			Name: spec.Name, Arity: spec.Arity, Flags: onceFlags(spec.Flags),
			FirstKey: spec.FirstKey, LastKey: spec.LastKey, Step: spec.Step,
			Categories: spec.Categories,
			// The proxy runs them through the engine; the local server
			// never does.
			Run: func(x *commands.Ctx) { x.W.Error("ERR ONCE commands run through the proxy's engine") },
		})
	}
	commands.AttachDocs(t)
	a.Commands.AddInfoSection(commands.InfoSection{Name: "once", Lines: func() [][2]string {
		st := &e.Stats
		f := func(n int64) string { return strconv.FormatInt(n, 10) }
		// As the embedded server's section, but for lease_lapses and
		// running_keys, which only the upstream could count; then the
		// proxy engine's own counters.
		return [][2]string{
			{"claims", f(st.Claims.Load())},
			{"completes", f(st.Completes.Load())},
			{"aborts", f(st.Aborts.Load())},
			{"replays", f(st.Replays.Load())},
			{"waits", f(st.Waits.Load())},
			{"wakeups", f(st.Wakeups.Load())},
			{"handoffs", f(st.Handoffs.Load())},
			{"stale_rejects", f(st.StaleRejects.Load())},
			{"mismatches", f(st.Mismatches.Load())},
			{"waiting_clients", f(e.Waiting())},
			{"events", f(st.Events.Load())},
			{"subscribes", f(st.Subscribes.Load())},
			{"rechecked", f(st.Rechecked.Load())},
			{"replica_short", f(st.ReplicaShort.Load())},
			{"upstream_errors", f(st.UpstreamErrors.Load())},
			{"tryagain_retries", f(st.TryAgains.Load())},
		}
	}})
	return nil
}

// onceFlags maps COMMAND's flag names to the table's flags.
func onceFlags(names []string) commands.Flags {
	var f commands.Flags
	for _, n := range names {
		switch n {
		case "write":
			f |= commands.Write
		case "readonly":
			f |= commands.ReadOnly
		case "denyoom":
			f |= commands.DenyOOM
		case "blocking":
			f |= commands.Blocking
		case "fast":
			f |= commands.Fast
		}
	}
	return f
}

// onceUp is the engine with the client it owns.
type onceUp struct {
	*onceup.Engine
	client redis.UniversalClient
}

// Close closes the engine, then its client.
func (o *onceUp) Close() error {
	return errors.Join(o.Engine.Close(), o.client.Close())
}
