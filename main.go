// Command oncekv is a Redis-compatible server that stores its data durably
// in Badger and runs a function once per key (the ONCE.* commands).
//
// main only wires: configuration, logger, store, command table, wire
// server, signals and graceful shutdown.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store/badgerdb"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "oncekv:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := config.Parse(args)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer log.Sync()

	fsync, err := badgerdb.ParseFsync(cfg.AppendFsync)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	opts := badgerdb.DefaultOptions(cfg.Dir)
	opts.Databases = cfg.Databases
	opts.Fsync = fsync
	opts.Logger = log.Named("store")
	opts.MemTableSize = cfg.MemTableSize
	opts.BlockCacheSize = cfg.BlockCacheSize
	st, err := badgerdb.Open(opts)
	if err != nil {
		return err
	}

	shutdown := make(chan struct{}, 1)
	cmds := commands.New(commands.Config{
		RequirePass: cfg.RequirePass,
		Directives:  cfg.Directives,
		Shutdown: func() {
			select {
			case shutdown <- struct{}{}:
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
		Logger: log.Named("commands"),
	}, st)
	srv := resp.NewServer(resp.Config{
		Addrs:       cfg.Addrs(),
		MaxClients:  cfg.MaxClients,
		IdleTimeout: cfg.IdleTimeout(),
		RequirePass: cfg.RequirePass != "",
		Logger:      log.Named("resp"),
	}, cmds)
	cmds.Attach(srv)
	engine := once.New(st, once.Config{DefaultLease: cfg.OnceLease, Logger: log.Named("once")})
	cmds.EnableOnce(engine)

	st.Start()
	if err := engine.Start(); err != nil {
		return errors.Join(err, st.Close())
	}
	if err := srv.Start(); err != nil {
		engine.Close()
		return errors.Join(err, st.Close())
	}
	log.Info("oncekv started",
		zap.String("version", commands.Version),
		zap.Strings("addr", cfg.Addrs()),
		zap.String("dir", cfg.Dir),
		zap.String("appendfsync", cfg.AppendFsync))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", zap.String("signal", s.String()))
	case <-shutdown:
		log.Info("shutting down", zap.String("reason", "SHUTDOWN command"))
	}
	signal.Stop(sig)
	srvErr := srv.Close()
	engine.Close()
	err = errors.Join(srvErr, st.Close())
	if err != nil {
		log.Error("shutdown", zap.Error(err))
		return err
	}
	log.Info("bye")
	return nil
}

// newLogger maps Redis's loglevel names onto zap's levels.
func newLogger(level string) (*zap.Logger, error) {
	lv := map[string]zapcore.Level{
		"debug": zap.DebugLevel, "verbose": zap.DebugLevel, "notice": zap.InfoLevel,
		"warning": zap.WarnLevel, "nothing": zap.FatalLevel,
	}[level]
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lv)
	zc.Sampling = nil
	zc.Encoding = "console"
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	log, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	return log, nil
}
