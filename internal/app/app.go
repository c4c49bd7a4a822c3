// Package app assembles a server from a configuration: the store, the ONCE
// engine, the command table and the wire server. main and the tests build
// servers the same way through it.
package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// App is a whole server.
type App struct {
	Store    *badgerdb.DB
	Engine   *once.Engine
	Commands *commands.Server
	Wire     *resp.Server
	log      *zap.Logger
	shutdown chan struct{}
}

// New opens the store and assembles the server. It starts nothing.
func New(cfg config.Config, log *zap.Logger) (*App, error) {
	if log == nil {
		log = zap.NewNop()
	}
	fsync, err := badgerdb.ParseFsync(cfg.AppendFsync)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	opts := badgerdb.DefaultOptions(cfg.Dir)
	opts.Databases = cfg.Databases
	opts.Fsync = fsync
	opts.Logger = log.Named("store")
	opts.MemTableSize = cfg.MemTableSize
	opts.BlockCacheSize = cfg.BlockCacheSize
	st, err := badgerdb.Open(opts)
	if err != nil {
		return nil, err
	}
	a := &App{Store: st, log: log, shutdown: make(chan struct{}, 1)}
	a.Commands = commands.New(commands.Config{
		RequirePass: cfg.RequirePass,
		Directives:  cfg.Directives,
		Shutdown: func() {
			select {
			case a.shutdown <- struct{}{}:
			default:
			}
		},
		Persistence: func() map[string]string {
			s := st.Stats()
			return map[string]string{
				"oncekv_appendfsync":     st.Fsync().String(),
				"oncekv_pending_writes":  strconv.FormatUint(s.Pending, 10),
				"oncekv_lsm_size_bytes":  strconv.FormatInt(s.LSMSize, 10),
				"oncekv_vlog_size_bytes": strconv.FormatInt(s.VlogSize, 10),
			}
		},
		ExpiredKeys: func() int64 { return st.Stats().Expired },
		Logger:      log.Named("commands"),
	}, st)
	a.Wire = resp.NewServer(resp.Config{
		Addrs:       cfg.Addrs(),
		MaxClients:  cfg.MaxClients,
		IdleTimeout: cfg.IdleTimeout(),
		RequirePass: cfg.RequirePass != "",
		Logger:      log.Named("resp"),
	}, a.Commands)
	a.Commands.Attach(a.Wire)
	a.Engine = once.New(st, once.Config{DefaultLease: cfg.OnceLease, Logger: log.Named("once")})
	a.Commands.EnableOnce(a.Engine)
	return a, nil
}

// Start starts the store's background work, loads the engine and listens.
func (a *App) Start() error {
	a.Store.Start()
	if err := a.Engine.Start(); err != nil {
		return errors.Join(fmt.Errorf("start once engine: %w", err), a.Store.Close())
	}
	if err := a.Wire.Start(); err != nil {
		a.Engine.Close()
		return errors.Join(err, a.Store.Close())
	}
	return nil
}

// ShutdownRequested is signalled by the SHUTDOWN command.
func (a *App) ShutdownRequested() <-chan struct{} { return a.shutdown }

// Addr is the first address listened on.
func (a *App) Addr() net.Addr { return a.Wire.Addrs()[0] }

// Close stops accepting, lets commands in flight finish, wakes waiters,
// then syncs and closes the store.
func (a *App) Close() error {
	wireErr := a.Wire.Close()
	a.Engine.Close()
	return errors.Join(wireErr, a.Store.Close())
}
