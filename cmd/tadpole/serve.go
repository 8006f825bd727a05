package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/gommon/bytes"
	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/telemetry"
)

// env returns the environment variable's value or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// envErrors are the environment variables set to values that do not
// parse: serve refuses to start with them rather than silently using the
// default.
var envErrors []error

func envInt(name string, def int) int {
	s := env(name, "")
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		envErrors = append(envErrors, fmt.Errorf("%s=%q: not an integer", name, s))
		return def
	}
	return v
}

func envDuration(name string, def time.Duration) time.Duration {
	s := env(name, "")
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		envErrors = append(envErrors, fmt.Errorf("%s=%q: not a duration (e.g. 30s, 5m)", name, s))
		return def
	}
	return v
}

// checkEnv reports the environment variables set to values that do not
// parse, and those the engine reads itself (TADPOLE_POLL) when out of
// range.
func checkEnv() error {
	errs := envErrors
	if s := env("TADPOLE_POLL", ""); s != "" {
		if v, err := strconv.Atoi(s); err != nil || v < 0 || v > 100 {
			errs = append(errs, fmt.Errorf("TADPOLE_POLL=%q: want an integer 0..100", s))
		}
	}
	return errors.Join(errs...)
}

func defaultModelsDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".tadpole", "models")
	}
	return "models"
}

func serve(args []string) error {
	o, err := parseServeFlags(args)
	if o == nil || err != nil {
		return err // nil after --help
	}
	if err := setupLogging(*o.logLevel, *o.logFormat); err != nil {
		return err
	}
	if err := applyMemoryLimit(*o.memoryLimit); err != nil { // serve_memory.go
		return err
	}
	sc, err := o.schedConfig()
	if err != nil {
		return err
	}
	engine.Init(backendDir(*o.backends))
	logDevices()
	cfg, err := o.serverConfig(sc)
	if err != nil {
		return err
	}
	addr := listenAddr(*o.host)
	cert, err := o.boundary.apply(&cfg, addr)
	if err != nil {
		return err
	}
	srv := server.New(cfg)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	slog.Info("Tadpole is listening", "addr", ln.Addr().String(), "tls", cert != nil, "models", *o.modelsDir, "parallel", *o.parallel,
		"auto_parallel", o.autoSlots, "auto_context", o.autoCtx)
	return runServer(srv, ln, o, cert)
}

// serveOptions are serve's flags, each defaulting to its environment
// variable.
type serveOptions struct {
	host, modelsDir, keepAlive, flash, kvType, backends *string
	logLevel, origins, logFormat, maxBlob, minFree      *string
	debugAddr                                           *string
	metricsCompat, preload                              *string
	memoryLimit                                         *string
	drainTimeout                                        *time.Duration
	parallel, numCtx, maxLoaded, maxQueue, maxCtx       *int
	threads                                             *int
	autoSlots, autoCtx                                  bool // sized from memory (sched.Config.AutoSlots, AutoCtx)
	allowRegistry                                       *[]string
	writeTimeout, readTimeout, idleTimeout              *time.Duration
	minBodyRate                                         *int64
	api                                                 *apiFlags
	boundary                                            *boundaryFlags
}

// parseServeFlags parses serve's arguments; it returns nil options (and
// no error) after printing --help.
func parseServeFlags(args []string) (*serveOptions, error) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	o := &serveOptions{}
	o.host = fs.String("host", env("TADPOLE_HOST", "127.0.0.1:11434"), "address to listen on (TADPOLE_HOST)")
	o.modelsDir = fs.String("models", env("TADPOLE_MODELS", defaultModelsDir()), "directory of models (TADPOLE_MODELS)")
	o.parallel = fs.Int("parallel", envInt("TADPOLE_NUM_PARALLEL", 4), "parallel requests per loaded model; unset: chosen per model from free memory, 1 to 16 on GPUs, 1 to 4 on the host (TADPOLE_NUM_PARALLEL)")
	o.numCtx = fs.Int("context-length", envInt("TADPOLE_CONTEXT_LENGTH", 0), "default context per request in tokens; 0 or unset: chosen per model from free memory, up to min(8192, the model's) (TADPOLE_CONTEXT_LENGTH)")
	o.maxLoaded = fs.Int("max-loaded-models", envInt("TADPOLE_MAX_LOADED_MODELS", 0), "most model instances loaded at once; 0: as many as fit in memory (TADPOLE_MAX_LOADED_MODELS)")
	o.maxQueue = fs.Int("max-queue", envInt("TADPOLE_MAX_QUEUE", 512), "most requests waiting for a slot (embedding and rerank requests: queued or computed) before answering 503 (TADPOLE_MAX_QUEUE)")
	o.keepAlive = fs.String("keep-alive", env("TADPOLE_KEEP_ALIVE", "5m"), "how long an idle model stays loaded; negative: forever (TADPOLE_KEEP_ALIVE)")
	o.maxCtx = fs.Int("max-ctx", envInt("TADPOLE_MAX_CTX", 0), "largest context a request may ask for with num_ctx; 0: the model's trained context (TADPOLE_MAX_CTX)")
	o.threads = fs.Int("threads", envInt("TADPOLE_NUM_THREADS", 0), "CPU threads per model; 0: all CPUs (TADPOLE_NUM_THREADS)")
	o.flash = fs.String("flash-attention", env("TADPOLE_FLASH_ATTENTION", "on"), "flash attention: on, off or auto (TADPOLE_FLASH_ATTENTION)")
	o.kvType = fs.String("kv-cache-type", env("TADPOLE_KV_CACHE_TYPE", "f16"), "KV cache type: f16, q8_0, q4_0 … (TADPOLE_KV_CACHE_TYPE)")
	o.backends = fs.String("backends", env("TADPOLE_BACKENDS", ""), "directory of GPU backend libraries (default: lib/tadpole beside the binary) (TADPOLE_BACKENDS)")
	o.logLevel = fs.String("log-level", env("TADPOLE_LOG_LEVEL", "info"), "debug, info, warn or error (TADPOLE_LOG_LEVEL)")
	o.origins = fs.String("origins", env("TADPOLE_ORIGINS", ""), "extra origins browsers may call from, comma-separated ('*' matches anything); Ollama's local origins are always allowed (TADPOLE_ORIGINS)")
	o.logFormat = fs.String("log-format", env("TADPOLE_LOG_FORMAT", "text"), "text or json (TADPOLE_LOG_FORMAT)")
	o.allowRegistry = fs.StringArray("allow-registry", splitList(env("TADPOLE_ALLOW_REGISTRY", "")), "registry HOST or HOST:PORT that pulls and pushes may reach at an address that is not public (loopback, private, link-local…); repeatable or comma-separated (TADPOLE_ALLOW_REGISTRY)")
	o.maxBlob = fs.String("max-blob-size", env("TADPOLE_MAX_BLOB_SIZE", "512GiB"), "largest blob an upload, import or pull may store; larger ones get 413; 0: no limit (TADPOLE_MAX_BLOB_SIZE)")
	o.minFree = fs.String("min-free-disk", env("TADPOLE_MIN_FREE_DISK", "1GiB"), "free space writes must leave on the models disk; writes below it get 507; 0: none (TADPOLE_MIN_FREE_DISK)")
	o.writeTimeout = fs.Duration("write-timeout", envDuration("TADPOLE_WRITE_TIMEOUT", dialect.DefaultWriteTimeout), "longest one write of a streamed answer may take; a client that stops reading loses its request (and slot) then (TADPOLE_WRITE_TIMEOUT)")
	o.readTimeout = fs.Duration("read-timeout", envDuration("TADPOLE_READ_TIMEOUT", server.DefaultReadTimeout), "longest a request body may pause, and the grace before --min-body-rate counts; a slower body is cut (TADPOLE_READ_TIMEOUT)")
	o.minBodyRate = fs.Int64("min-body-rate", int64(envInt("TADPOLE_MIN_BODY_RATE", server.DefaultMinBodyRate)), "slowest average rate, in bytes/s, a request body may arrive at past --read-timeout; 0: no rate (TADPOLE_MIN_BODY_RATE)")
	o.idleTimeout = fs.Duration("idle-timeout", envDuration("TADPOLE_IDLE_TIMEOUT", server.DefaultIdleTimeout), "how long a keep-alive connection may wait for its next request before it is closed (TADPOLE_IDLE_TIMEOUT)")
	o.debugAddr = fs.String("debug-addr", env("TADPOLE_DEBUG_ADDR", ""), "address to serve Go's pprof profiles on (/debug/pprof/), e.g. 127.0.0.1:6060; off when empty (TADPOLE_DEBUG_ADDR)")
	o.metricsCompat = fs.String("metrics-compat", env("TADPOLE_METRICS_COMPAT", ""), "also export the model-server gauges (waiting and running requests, KV-cache use) under another server's names for a router that reads them: vllm (vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc); empty: Tadpole's names only (TADPOLE_METRICS_COMPAT)")
	o.drainTimeout = fs.Duration("drain-timeout", envDuration("TADPOLE_DRAIN_TIMEOUT", 30*time.Second), "on SIGTERM or SIGINT, how long running requests (streams) may go on while new ones are refused and /readyz fails; those still running then are cut (a second signal cuts them at once) (TADPOLE_DRAIN_TIMEOUT)")
	o.preload = fs.String("preload", env("TADPOLE_PRELOAD", ""), "models to load at start and keep loaded, comma-separated; /readyz answers 503 until they are loaded, and one that cannot load stops the server (TADPOLE_PRELOAD)")
	o.memoryLimit = fs.String("memory-limit", env("TADPOLE_MEMORY_LIMIT", "auto"), "soft limit of Go's heap (the collector works harder near it): auto (3/4 of the least of the machine's memory, the cgroup's limit and RLIMIT_AS), off, or a size such as 8GiB; GOMEMLIMIT wins when set; llama.cpp's memory is outside it (TADPOLE_MEMORY_LIMIT)")
	o.api = addAPIFlags(fs)
	o.boundary = addBoundaryFlags(fs)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: tadpole serve [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil, nil
		}
		return nil, err
	}
	if err := checkEnv(); err != nil {
		return nil, err
	}
	// Neither the flag nor its variable: the scheduler sizes each model
	// from free memory (issue 24); the flag's default of 4 is then unused.
	o.autoSlots = !fs.Changed("parallel") && env("TADPOLE_NUM_PARALLEL", "") == ""
	o.autoCtx = *o.numCtx == 0
	return o, nil
}

// schedConfig checks the scheduler's flags and returns its config.
func (o *serveOptions) schedConfig() (sched.Config, error) {
	var ka ollamaapi.Duration
	if err := ka.UnmarshalJSON([]byte(strconv.Quote(*o.keepAlive))); err != nil {
		return sched.Config{}, fmt.Errorf("--keep-alive: %w", err)
	}
	fa, err := parseFlash(*o.flash)
	if err != nil {
		return sched.Config{}, err
	}
	if err := checkServeLimits(*o.parallel, *o.numCtx, *o.maxCtx, *o.threads); err != nil {
		return sched.Config{}, err
	}
	return sched.Config{
		Parallel: *o.parallel, NumCtx: *o.numCtx, MaxLoaded: *o.maxLoaded, KeepAlive: ka.Duration,
		MaxCtx: *o.maxCtx, Threads: *o.threads, FlashAttn: fa, KVType: *o.kvType, MaxQueue: *o.maxQueue,
		AutoSlots: o.autoSlots, AutoCtx: o.autoCtx,
	}, nil
}

// serverConfig builds the server's config (all but the boundary flags,
// which need the listen address) around the scheduler's.
func (o *serveOptions) serverConfig(sc sched.Config) (server.Config, error) {
	cfg := server.Config{ModelsDir: *o.modelsDir, Sched: sc}
	if *o.writeTimeout <= 0 {
		return cfg, fmt.Errorf("--write-timeout must be positive, not %s", *o.writeTimeout)
	}
	cfg.WriteTimeout = *o.writeTimeout
	if *o.readTimeout <= 0 || *o.idleTimeout <= 0 || *o.minBodyRate < 0 {
		return cfg, fmt.Errorf("--read-timeout and --idle-timeout must be positive and --min-body-rate 0 or more, not %s, %s and %d", *o.readTimeout, *o.idleTimeout, *o.minBodyRate)
	}
	cfg.ReadTimeout, cfg.IdleTimeout, cfg.MinBodyRate = *o.readTimeout, *o.idleTimeout, *o.minBodyRate
	if cfg.MinBodyRate == 0 {
		cfg.MinBodyRate = -1 // server.Config: negative is none
	}
	if *o.drainTimeout < 0 {
		return cfg, fmt.Errorf("--drain-timeout must be 0 or more, not %s", *o.drainTimeout)
	}
	compat, err := telemetry.ParseCompat(*o.metricsCompat)
	if err != nil {
		return cfg, err
	}
	cfg.MetricsCompat, cfg.Preload = compat, splitList(*o.preload)
	if err := o.api.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := applyStoreFlags(&cfg, *o.allowRegistry, *o.maxBlob, *o.minFree); err != nil {
		return cfg, err
	}
	if cfg.Jobs != nil { // the job database's disk keeps the same floor
		cfg.Jobs.SetMinFreeDisk(cfg.MinFreeDisk)
	}
	if *o.origins != "" {
		cfg.CORSOrigins = append([]string(nil), server.DefaultCORSOrigins...)
		for _, s := range strings.Split(*o.origins, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.CORSOrigins = append(cfg.CORSOrigins, s)
			}
		}
	}
	return cfg, nil
}

// runServer serves srv on ln, with the metrics and debug listeners the
// flags ask for, until one of them fails (or a --preload model cannot
// load) or SIGINT or SIGTERM comes; then it drains srv (see drain) and
// shuts it down.
func runServer(srv *server.Server, ln net.Listener, o *serveOptions, cert *server.Certificate) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	errc := make(chan error, 4)
	go func() { errc <- srv.Serve(ln) }()
	go func() {
		if err := srv.Preload(ctx); err != nil && ctx.Err() == nil {
			errc <- err
		}
	}()
	if err := o.boundary.serveMetrics(srv, errc); err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	if _, err := serveDebug(*o.debugAddr, errc); err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	reloadOnHUP(ctx, cert)
	select {
	case err := <-errc:
		stop()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return err
	case sig := <-sigs:
		slog.Info("shutting down", "signal", sig.String(), "drain_timeout", *o.drainTimeout)
	}
	stop()
	drain(srv, *o.drainTimeout, sigs)
	return nil
}

// drain is the graceful stop a rolling update needs: readiness fails and
// new requests are refused at once, the running ones (streams) go on for
// up to timeout (a second signal ends the wait), then Shutdown cuts what
// is left, hands unfinished jobs back to the queue and unloads the
// models. A cut is not a failure of the server: the process exits 0.
func drain(srv *server.Server, timeout time.Duration, sigs <-chan os.Signal) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			slog.Warn("second signal: cutting the running requests", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Drain(ctx); err != nil {
		slog.Warn("drain ended with requests running: they are cut", "error", err, "took", time.Since(t0).Round(time.Millisecond))
	} else {
		slog.Info("drained: no request running", "took", time.Since(t0).Round(time.Millisecond))
	}
	if err := srv.Shutdown(ctx); err != nil {
		slog.Warn("shutdown", "error", err)
	}
	slog.Info("stopped", "took", time.Since(t0).Round(time.Millisecond))
}

// backendDir is --backends, or lib/tadpole beside the binary
// (bin/../lib/tadpole as `make cuda` lays it out, or ./lib/tadpole).
func backendDir(flag string) string {
	if flag != "" {
		return flag
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	for _, d := range []string{filepath.Join(filepath.Dir(exe), "..", "lib", "tadpole"), filepath.Join(filepath.Dir(exe), "lib", "tadpole")} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}

func parseFlash(s string) (engine.FlashAttention, error) {
	switch strings.ToLower(s) {
	case "on", "1", "true":
		return engine.FlashAttentionOn, nil
	case "off", "0", "false":
		return engine.FlashAttentionOff, nil
	case "auto", "":
		return engine.FlashAttentionAuto, nil
	}
	return 0, fmt.Errorf("--flash-attention: want on, off or auto, not %q", s)
}

func setupLogging(level, format string) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, opts)))
	case "json":
		slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, opts)))
	default:
		return fmt.Errorf("--log-format: want text or json, not %q", format)
	}
	return nil
}

// checkServeLimits refuses serve flags the engine cannot take (see
// engine/limits.go): they are checked once here, not at a model's load.
func checkServeLimits(parallel, numCtx, maxCtx, threads int) error {
	switch {
	case parallel < 1 || parallel > engine.MaxSeq:
		return fmt.Errorf("--parallel %d is out of range (1..%d)", parallel, engine.MaxSeq)
	case numCtx != 0 && (numCtx < sched.MinCtx || numCtx > sched.MaxCtxCap):
		return fmt.Errorf("--context-length %d is out of range (0, or %d..%d)", numCtx, sched.MinCtx, sched.MaxCtxCap)
	case maxCtx != 0 && (maxCtx < sched.MinCtx || maxCtx > sched.MaxCtxCap):
		return fmt.Errorf("--max-ctx %d is out of range (0, or %d..%d)", maxCtx, sched.MinCtx, sched.MaxCtxCap)
	case threads < 0 || threads > engine.ThreadLimit():
		return fmt.Errorf("--threads %d is out of range (0..%d: four per CPU)", threads, engine.ThreadLimit())
	}
	return nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// applyStoreFlags sets the registry allow list and the disk limits.
func applyStoreFlags(cfg *server.Config, allow []string, maxBlob, minFree string) error {
	for _, a := range allow {
		cfg.AllowRegistries = append(cfg.AllowRegistries, splitList(a)...)
	}
	var err error
	if cfg.MaxBlobSize, err = parseSize("--max-blob-size", maxBlob); err != nil {
		return err
	}
	if cfg.MinFreeDisk, err = parseSize("--min-free-disk", minFree); err != nil {
		return err
	}
	if len(cfg.AllowRegistries) > 0 {
		slog.Info("registries allowed at non-public addresses", "hosts", cfg.AllowRegistries)
	}
	return nil
}

// parseSize reads a size such as 512GiB, 1GB or 0.
func parseSize(flag, s string) (int64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	n, err := bytes.Parse(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: want a size such as 1GiB, or 0, not %q", flag, s)
	}
	return n, nil
}
