// Command oncekv is a Redis-compatible server that stores its data durably
// in Badger and runs a function once per key (the ONCE.* commands).
//
// main only wires: configuration, logger, the server, signals and graceful
// shutdown; `oncekv backup` and `oncekv restore` run the store's offline
// backup tools, and `oncekv ping` is the container health check.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/app"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/store/badgerdb"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oncekv:", err)
		os.Exit(1)
	}
}

// usage is what `oncekv --help` prints.
const usage = `Usage: oncekv [/path/to/oncekv.conf] [--directive value ...]
       oncekv backup [--dir DIR] FILE
       oncekv restore [--dir DIR] FILE
       oncekv ping [--host HOST] [--port PORT] [--password P]
       oncekv -h | --help | -v | --version

A Redis-compatible server that runs a function once per key (ONCE.*).
Directives are read from the defaults, then the config file, then the
ONCEKV_<DIRECTIVE> environment variables, then the --directive flags.

Examples:
       oncekv                          (127.0.0.1:6379, data in ./data)
       oncekv --port 6380 --dir /var/lib/oncekv --appendfsync always
       oncekv /etc/oncekv.conf --bind 0.0.0.0 --requirepass secret

Every directive is listed in the README's Configuration section.
`

func run(args []string, stdout io.Writer) error {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help", "help":
			_, err := io.WriteString(stdout, usage)
			return err
		case "-v", "--version":
			_, err := fmt.Fprintf(stdout, "oncekv v=%s redis=%s\n", commands.OncekvVersion, commands.Version)
			return err
		}
	}
	if len(args) > 0 && (args[0] == "backup" || args[0] == "restore") {
		return backupTool(args[0], args[1:])
	}
	if len(args) > 0 && args[0] == "ping" {
		return app.Ping(args[1:], os.Environ(), os.Stdout, os.Stderr)
	}
	cfg, err := config.Load(args, os.Environ())
	if err != nil {
		return err
	}
	log, level, err := app.NewLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	defer log.Sync()
	if unknown := config.UnknownEnv(os.Environ()); len(unknown) > 0 {
		log.Warn("ignoring environment variables that name no directive", zap.Strings("variables", unknown))
	}

	app.ApplyProcs(cfg, log)
	app.StartSchedPolicy(cfg, log)
	app.ApplyMemoryLimit(cfg, log)
	srv, err := app.New(cfg, log)
	if err != nil {
		return err
	}
	srv.UseLogLevel(level)
	if err := srv.Start(); err != nil {
		return err
	}
	gov := srv.MemoryGovernor()
	gov.Start()
	defer gov.Close()
	if cfg.Upstream != "" {
		log.Info("oncekv started as a proxy",
			zap.String("version", commands.Version),
			zap.Strings("addr", srv.ListenAddrs()),
			zap.String("upstream", config.MaskPassword(cfg.Upstream)))
	} else {
		log.Info("oncekv started",
			zap.String("version", commands.Version),
			zap.Strings("addr", srv.ListenAddrs()),
			zap.String("dir", cfg.Dir),
			zap.String("appendfsync", cfg.AppendFsync))
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", zap.String("signal", s.String()))
	case <-srv.ShutdownRequested():
		log.Info("shutting down", zap.String("reason", "SHUTDOWN command"))
	}
	signal.Stop(sig)
	if err := srv.Close(); err != nil {
		log.Error("shutdown", zap.Error(err))
		return err
	}
	log.Info("bye")
	return nil
}

// backupTool is `oncekv backup --dir D FILE` (the server must be stopped;
// a running server backs up online with its BACKUP command) and `oncekv
// restore --dir D FILE` (D must be empty or missing).
func backupTool(name string, args []string) error {
	fs := flag.NewFlagSet("oncekv "+name, flag.ContinueOnError)
	dir := fs.String("dir", config.Default().Dir, "the data directory")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: oncekv %s [--dir DIR] FILE\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("%s: expected one FILE argument after the flags", name)
	}
	opts := badgerdb.DefaultOptions(*dir)
	var st badgerdb.BackupStats
	var err error
	if name == "backup" {
		st, err = badgerdb.BackupDir(opts, fs.Arg(0))
	} else {
		st, err = badgerdb.RestoreFile(opts, fs.Arg(0))
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s %s: %v\n", name, fs.Arg(0), st)
	return nil
}
