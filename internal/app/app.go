// Package app assembles a server from a configuration: the store, the ONCE
// engine, the command table and the wire server. main and the tests build
// servers the same way through it.
package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/metrics"
	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/proxy"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// App is a whole server: embedded (Store and Engine set) or, with the
// upstream directive, a proxy (Proxy set, no Store nor Engine; see
// proxy.go).
type App struct {
	Store    *badgerdb.DB
	Engine   *once.Engine
	Commands *commands.Server
	Wire     *resp.Server
	// Proxy forwards to the upstream in proxy mode; nil otherwise.
	Proxy *proxy.Proxy
	// onceUp runs the ONCE commands in proxy mode (proxy.go).
	onceUp   onceEngine
	log      *zap.Logger
	shutdown chan struct{}
	// metrics is the Prometheus endpoint, nil without metrics-addr
	// (observability.go).
	metrics *metrics.Server

	// cfgMu guards cfg, the configuration in force, which CONFIG SET
	// changes (runtime.go), and level, the logger's level if known.
	cfgMu sync.Mutex
	cfg   config.Config
	level *zap.AtomicLevel
	// rewriteMu orders CONFIG REWRITEs, so that the last to write holds
	// the latest configuration.
	rewriteMu sync.Mutex
}

// New opens the store and assembles the server. It starts nothing.
func New(cfg config.Config, log *zap.Logger) (*App, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Upstream != "" {
		return newProxy(cfg, log)
	}
	fsync, err := badgerdb.ParseFsync(cfg.AppendFsync)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := tlsConfig(cfg)
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
	opts.CacheSize = cfg.ValueCacheSize
	opts.TrimInterval = cfg.TableTrim
	opts.Compression = cfg.TableCompression
	opts.MinFreeDisk = cfg.MinFreeDisk
	// A server busy with reads is not calm either: the store applies its
	// waiting writes early only when few commands come (CalmApply,
	// CalmActivity). The applier calls this after Start, once a.Commands
	// is set.
	var a *App
	opts.Activity = func() int64 { return a.Commands.CommandsProcessed() }
	st, err := badgerdb.Open(opts)
	if err != nil {
		return nil, err
	}
	a = &App{Store: st, log: log, shutdown: make(chan struct{}, 1), cfg: cfg}
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
		Persistence: func() map[string]string {
			s := st.Stats()
			refused, cause := "0", "none"
			if s.LastError != nil {
				refused, cause = "1", strings.NewReplacer("\r", " ", "\n", " ").Replace(s.LastError.Error())
			}
			return map[string]string{
				"oncekv_appendfsync":     st.Fsync().String(),
				"oncekv_pending_writes":  strconv.FormatUint(s.Pending, 10),
				"oncekv_lsm_size_bytes":  strconv.FormatInt(s.LSMSize, 10),
				"oncekv_vlog_size_bytes": strconv.FormatInt(s.VlogSize, 10),
				"oncekv_writes_refused":  refused,
				"oncekv_write_error":     cause,
				"oncekv_unsynced_writes": unsyncedWrites(st, s),

				"oncekv_key_filter_bytes": strconv.FormatInt(s.FilterBytes, 10),
				"oncekv_lookups":          strconv.FormatInt(s.Lookups, 10),
				"oncekv_lookups_skipped":  strconv.FormatInt(s.LookupsSkipped, 10),
				"oncekv_log_writes":       strconv.FormatUint(s.LogWrites, 10),
				"oncekv_log_fsyncs":       strconv.FormatUint(s.LogSyncs, 10),
				"oncekv_log_writes_led":   strconv.FormatUint(s.LogWritesLed, 10),
			}
		},
		ExpiredKeys: func() int64 { return st.Stats().Expired },
		ConfigFile:  cfg.ConfigFile,
		Logger:      log.Named("commands"),
	}, st)
	a.Wire = resp.NewServer(wireConfig(cfg, tlsCfg, log), a.Commands)
	a.Wire.SetPubsubLimit(PubsubLimit(cfg))
	a.Wire.SetNormalLimit(NormalLimit(cfg))
	a.Commands.Attach(a.Wire)
	a.Engine = once.New(st, once.Config{DefaultLease: cfg.OnceLease, Logger: log.Named("once")})
	a.Commands.EnableOnce(a.Engine)
	a.Commands.Table().Register(backupCommand(st, cfg.BackupDir))
	a.initObservability(cfg, log)
	// Renames apply to the whole table, so they come last.
	for _, r := range cfg.Renames {
		if err := a.Commands.Table().Rename(r.From, r.To); err != nil {
			return nil, errors.Join(fmt.Errorf("rename-command %s %q: %w", r.From, r.To, err), st.Close())
		}
	}
	return a, nil
}

// tlsConfig builds the TLS configuration of tls-port, or nil without it:
// the server's certificate, and the CA that client certificates must be
// signed by (tls-auth-clients yes: required; optional: checked if given).
func tlsConfig(cfg config.Config) (*tls.Config, error) {
	if cfg.TLSPort == 0 {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls-cert-file / tls-key-file: %w", err)
	}
	t := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.TLSCACertFile != "" {
		pem, err := os.ReadFile(cfg.TLSCACertFile)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca-cert-file %s: no PEM certificate in it", cfg.TLSCACertFile)
		}
		t.ClientCAs = pool
	}
	switch cfg.TLSAuthClients {
	case "yes":
		t.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		t.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		t.ClientAuth = tls.NoClientCert
	}
	return t, nil
}

// backupCommand is BACKUP name: an online, consistent backup of the whole
// store (every database, deadlines, ONCE records, the token counter) into
// backup-dir/name, written atomically; `oncekv restore` reads it. Only a
// plain file name is accepted, and only with backup-dir configured, so
// that a client cannot make the server write anywhere else.
func backupCommand(st *badgerdb.DB, dir string) *commands.Command {
	return &commands.Command{
		Name: "backup", Arity: 2, Flags: commands.Admin | commands.NoScript | commands.NoMulti,
		Categories: []string{"admin", "slow", "dangerous"},
		Doc: commands.Doc{
			Summary: "Writes a consistent backup of the whole store to a file in backup-dir (oncekv).",
			Since:   "1.0.0", Group: "server", Complexity: "O(N) where N is the number of keys",
			Args: []commands.Arg{{Name: "filename", Type: commands.ArgString}},
		},
		Run: func(x *commands.Ctx) {
			name := string(x.Args[1])
			switch {
			case dir == "":
				x.W.Error("ERR BACKUP is disabled: start the server with --backup-dir <directory>")
				return
			case name == "" || name != filepath.Base(name) || strings.HasPrefix(name, "."):
				x.W.Error("ERR BACKUP takes a plain file name, written into backup-dir")
				return
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				x.W.Error("ERR backup-dir: " + err.Error())
				return
			}
			if _, err := st.BackupFile(filepath.Join(dir, name)); err != nil {
				x.Fail(err)
				return
			}
			x.W.OK()
		},
	}
}

// Start loads the engine, starts the store's background work and listens.
func (a *App) Start() error {
	if a.Proxy != nil {
		return a.startProxy()
	}
	// The engine first: the store's first walk of its keys, which its
	// Start begins, finds the engine's running records of before the
	// restart for it (once.Engine.Start).
	if err := a.Engine.Start(); err != nil {
		return errors.Join(fmt.Errorf("start once engine: %w", err), a.Store.Close())
	}
	a.Store.Start()
	if err := a.startObservability(); err != nil {
		a.Engine.Close()
		return errors.Join(err, a.Store.Close())
	}
	if err := a.Wire.Start(); err != nil {
		a.Engine.Close()
		return errors.Join(err, a.closeObservability(), a.Store.Close())
	}
	return nil
}

// ShutdownRequested is signalled by the SHUTDOWN command.
func (a *App) ShutdownRequested() <-chan struct{} { return a.shutdown }

// Addr is the first address listened on.
func (a *App) Addr() net.Addr { return a.Wire.Addrs()[0] }

// ListenAddrs are the plain addresses listened on, as host:port, with the
// port the system picked where the configuration says 0: what the startup
// line shows, so that a server started with --port 0 can be found.
func (a *App) ListenAddrs() []string {
	var out []string
	for _, ad := range a.Wire.Addrs() {
		out = append(out, ad.String())
	}
	return out
}

// Close stops accepting, lets commands in flight finish, wakes waiters,
// then syncs and closes the store.
func (a *App) Close() error {
	if a.Proxy != nil {
		return a.closeProxy()
	}
	wireErr := a.Wire.Close()
	obsErr := a.closeObservability()
	a.Engine.Close()
	return errors.Join(wireErr, obsErr, a.Store.Close())
}

// wireConfig is the wire server's configuration, the same in both modes.
func wireConfig(cfg config.Config, tlsCfg *tls.Config, log *zap.Logger) resp.Config {
	return resp.Config{
		Addrs:         cfg.Addrs(),
		MaxClients:    cfg.MaxClients,
		IdleTimeout:   cfg.IdleTimeout(),
		RequirePass:   cfg.RequirePass != "",
		Logger:        log.Named("resp"),
		TLSAddrs:      cfg.TLSAddrs(),
		TLS:           tlsCfg,
		ProtectedMode: cfg.ProtectedMode,
		Limits: resp.Limits{
			MaxBulkLen:       cfg.ProtoMaxBulkLen,
			QueryBufferLimit: cfg.ClientQueryBufferLimit,
		},
	}
}

// NormalLimit is client-output-buffer-limit's normal class, which bounds
// monitors on the wire.
func NormalLimit(cfg config.Config) resp.OutputLimit {
	l := cfg.ClientOutputBufferLimit[config.ClassNormal]
	return resp.OutputLimit{Hard: l.Hard, Soft: l.Soft, SoftSeconds: l.SoftFor()}
}

// PubsubLimit is client-output-buffer-limit's pubsub class, for the wire.
func PubsubLimit(cfg config.Config) resp.OutputLimit {
	l := cfg.ClientOutputBufferLimit[config.ClassPubsub]
	return resp.OutputLimit{Hard: l.Hard, Soft: l.Soft, SoftSeconds: l.SoftFor()}
}
