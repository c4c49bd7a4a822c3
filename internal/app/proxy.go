package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/proxy"
	"github.com/oncekv/oncekv/resp"
)

// Proxy mode (the upstream directive): no store is opened and the data
// directory is not used. The wire server's handler is a proxy.Proxy, which
// forwards to the upstream and hands the commands about the connection
// itself to a command server without a store (a.Commands: HELLO, AUTH,
// CLIENT, COMMAND, CONFIG, INFO's own sections); CONFIG SET works as in
// embedded mode. The ONCE commands are run by a onceEngine over a go-redis
// client of the upstream.

// onceEngine runs the ONCE commands in proxy mode.
type onceEngine interface {
	proxy.OnceHandler
	Start() error
	Close() error
}

// closeGrace is how long Close lets commands in flight finish before it
// closes the upstream connections under them (an upstream that stopped
// answering must not hold the shutdown). A variable for the tests.
var closeGrace = 5 * time.Second

func newProxy(cfg config.Config, log *zap.Logger) (*App, error) {
	up, err := proxy.ParseUpstream(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	a := &App{log: log, shutdown: make(chan struct{}, 1), cfg: cfg}
	a.Commands = commands.New(commands.Config{
		RequirePass:     cfg.RequirePass,
		ProtoMaxBulkLen: cfg.ProtoMaxBulkLen,
		Directives:      func() map[string]string { return a.Config().Directives() },
		SetConfig:       a.SetConfig,
		RewriteConfig:   a.rewriteConfigFunc(cfg),
		Shutdown: func() {
			select {
			case a.shutdown <- struct{}{}:
			default:
			}
		},
		ConfigFile: cfg.ConfigFile,
		Logger:     log.Named("commands"),
	}, nil)
	renames := map[string]string{}
	for _, r := range cfg.Renames {
		renames[strings.ToLower(r.From)] = strings.ToLower(r.To)
	}
	for from, to := range renames {
		// As Redis: a new name may not be a command's (the proxy knows
		// its own table; the upstream's is read later).
		if _, away := renames[to]; to != "" && to != from && !away && a.Commands.Table().Lookup([]byte(to)) != nil {
			return nil, fmt.Errorf("rename-command %s %q: target command name already exists", from, to)
		}
	}
	a.Proxy = proxy.New(proxy.Config{
		Upstream:    up,
		Local:       a.Commands,
		RequirePass: cfg.RequirePass,
		Renames:     renames,
		Logger:      log.Named("proxy"),
	})
	a.Wire = resp.NewServer(wireConfig(cfg, tlsCfg, log), a.Proxy)
	a.Commands.Attach(a.Wire)
	if err := a.wireOnce(up, cfg); err != nil {
		return nil, err
	}
	a.initObservability(cfg, log)
	// rename-command is applied by the proxy, to every command, its own
	// and the upstream's (the local table keeps the original names, which
	// the proxy translates to).
	return a, nil
}

// startProxy starts the proxy (it reads the topology), the ONCE engine,
// the metrics endpoint and the listeners.
func (a *App) startProxy() error {
	if err := a.Proxy.Start(); err != nil {
		return err
	}
	if a.onceUp != nil {
		if err := a.onceUp.Start(); err != nil {
			return errors.Join(fmt.Errorf("start once engine: %w", err), a.Proxy.Close())
		}
	}
	if err := a.startObservability(); err != nil {
		return errors.Join(err, a.closeOnce(), a.Proxy.Close())
	}
	if err := a.Wire.Start(); err != nil {
		return errors.Join(err, a.closeObservability(), a.closeOnce(), a.Proxy.Close())
	}
	a.log.Info("proxy mode", zap.String("upstream", up(a)), zap.String("mode", a.Proxy.Upstream().Mode.String()))
	return nil
}

func up(a *App) string { return a.Proxy.Upstream().String() }

// closeProxy stops accepting, lets commands in flight finish (for up to
// closeGrace, then closes the upstream connections under them), and
// closes the ONCE engine and the proxy's connections.
func (a *App) closeProxy() error {
	done := make(chan error, 1)
	go func() { done <- a.Wire.Close() }()
	var wireErr error
	select {
	case wireErr = <-done:
	case <-time.After(closeGrace):
		a.log.Warn("commands still waiting on the upstream after the grace period; closing the upstream connections")
		_ = a.Proxy.Close()
		wireErr = <-done
	}
	obsErr := a.closeObservability()
	onceErr := a.closeOnce()
	return errors.Join(wireErr, obsErr, onceErr, a.Proxy.Close())
}

func (a *App) closeOnce() error {
	if a.onceUp == nil {
		return nil
	}
	return a.onceUp.Close()
}
