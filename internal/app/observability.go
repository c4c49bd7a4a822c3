package app

import (
	"time"

	"errors"
	"net"
	"strconv"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/metrics"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// initObservability applies the slow log directives and, with
// metrics-addr, builds the metrics endpoint (started by Start).
func (a *App) initObservability(cfg config.Config, log *zap.Logger) {
	a.Commands.SetSlowlog(cfg.SlowlogLogSlowerThan, cfg.SlowlogMaxLen)
	// Not observability, but a setting applied the same way at start.
	a.Commands.SetHashLimits(cfg.HashMaxListpackEntries, cfg.HashMaxListpackValue)
	a.Commands.SetMaxIntsetEntries(cfg.SetMaxIntsetEntries)
	a.Commands.SetZsetLimits(cfg.ZsetMaxListpackEntries, cfg.ZsetMaxListpackValue)
	a.Commands.SetBusyReplyThreshold(time.Duration(cfg.BusyReplyThreshold) * time.Millisecond)
	if cfg.MetricsAddr != "" {
		var st metrics.StoreStats // a nil *badgerdb.DB would not be a nil interface
		if a.Store != nil {
			st = a.Store
		}
		a.metrics = metrics.New(cfg.MetricsAddr, a.Commands, st, log.Named("metrics"))
	}
}

// startObservability starts the command layer's sampler (INFO's
// instantaneous rates) and the metrics endpoint, if configured.
func (a *App) startObservability() error {
	if a.metrics != nil {
		if err := a.metrics.Start(); err != nil {
			return err
		}
		a.log.Info("serving Prometheus metrics", zap.String("url", "http://"+a.metrics.Addr().String()+"/metrics"))
	}
	a.Commands.Start()
	return nil
}

func (a *App) closeObservability() error {
	a.Commands.Close()
	if a.metrics == nil {
		return nil
	}
	if err := a.metrics.Close(); err != nil {
		return errors.New("metrics endpoint: " + err.Error())
	}
	return nil
}

// MetricsAddr is the address the metrics endpoint listens on (with the
// port the system chose for port 0), or nil without metrics-addr or
// before Start.
func (a *App) MetricsAddr() net.Addr {
	if a.metrics == nil {
		return nil
	}
	return a.metrics.Addr()
}

// unsyncedWrites is the number of write transactions not yet durable: the
// ones staged and, with appendfsync everysec, the ones committed to the
// storage engine and waiting for the next fsync (INFO
// rdb_changes_since_last_save).
func unsyncedWrites(st *badgerdb.DB, s badgerdb.Stats) string {
	n := s.Pending
	if st.Fsync() == badgerdb.FsyncEverysec && s.Committed > s.Synced {
		n += s.Committed - s.Synced
	}
	return strconv.FormatUint(n, 10)
}
