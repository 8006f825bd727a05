package main

import (
	"context"
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
	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/api"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// env returns the environment variable's value or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(env(name, "")); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func defaultModelsDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".tadpole", "models")
	}
	return "models"
}

func serve(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	host := fs.String("host", env("TADPOLE_HOST", "127.0.0.1:11434"), "address to listen on (TADPOLE_HOST)")
	modelsDir := fs.String("models", env("TADPOLE_MODELS", defaultModelsDir()), "directory of models (TADPOLE_MODELS)")
	parallel := fs.Int("parallel", envInt("TADPOLE_NUM_PARALLEL", 4), "parallel requests per loaded model (TADPOLE_NUM_PARALLEL)")
	numCtx := fs.Int("context-length", envInt("TADPOLE_CONTEXT_LENGTH", 0), "default context per request in tokens; 0: min(4096, the model's) (TADPOLE_CONTEXT_LENGTH)")
	maxLoaded := fs.Int("max-loaded-models", envInt("TADPOLE_MAX_LOADED_MODELS", 0), "most model instances loaded at once; 0: as many as fit in memory (TADPOLE_MAX_LOADED_MODELS)")
	maxQueue := fs.Int("max-queue", envInt("TADPOLE_MAX_QUEUE", 512), "most requests waiting for a slot before answering 503 (TADPOLE_MAX_QUEUE)")
	keepAlive := fs.String("keep-alive", env("TADPOLE_KEEP_ALIVE", "5m"), "how long an idle model stays loaded; negative: forever (TADPOLE_KEEP_ALIVE)")
	maxCtx := fs.Int("max-ctx", envInt("TADPOLE_MAX_CTX", 0), "largest context a request may ask for with num_ctx; 0: the model's trained context (TADPOLE_MAX_CTX)")
	threads := fs.Int("threads", envInt("TADPOLE_NUM_THREADS", 0), "CPU threads per model; 0: all CPUs (TADPOLE_NUM_THREADS)")
	flash := fs.String("flash-attention", env("TADPOLE_FLASH_ATTENTION", "on"), "flash attention: on, off or auto (TADPOLE_FLASH_ATTENTION)")
	kvType := fs.String("kv-cache-type", env("TADPOLE_KV_CACHE_TYPE", "f16"), "KV cache type: f16, q8_0, q4_0 … (TADPOLE_KV_CACHE_TYPE)")
	backends := fs.String("backends", env("TADPOLE_BACKENDS", ""), "directory of GPU backend libraries (default: lib/tadpole beside the binary) (TADPOLE_BACKENDS)")
	logLevel := fs.String("log-level", env("TADPOLE_LOG_LEVEL", "info"), "debug, info, warn or error (TADPOLE_LOG_LEVEL)")
	origins := fs.String("origins", env("TADPOLE_ORIGINS", ""), "extra origins browsers may call from, comma-separated ('*' matches anything); Ollama's local origins are always allowed (TADPOLE_ORIGINS)")
	logFormat := fs.String("log-format", env("TADPOLE_LOG_FORMAT", "text"), "text or json (TADPOLE_LOG_FORMAT)")
	allowRegistry := fs.StringArray("allow-registry", splitList(env("TADPOLE_ALLOW_REGISTRY", "")), "registry HOST or HOST:PORT that pulls and pushes may reach at a loopback, link-local or private address; repeatable or comma-separated (TADPOLE_ALLOW_REGISTRY)")
	maxBlob := fs.String("max-blob-size", env("TADPOLE_MAX_BLOB_SIZE", "512GiB"), "largest blob an upload, import or pull may store; larger ones get 413; 0: no limit (TADPOLE_MAX_BLOB_SIZE)")
	minFree := fs.String("min-free-disk", env("TADPOLE_MIN_FREE_DISK", "1GiB"), "free space writes must leave on the models disk; writes below it get 507; 0: none (TADPOLE_MIN_FREE_DISK)")
	writeTimeout := fs.Duration("write-timeout", envDuration("TADPOLE_WRITE_TIMEOUT", dialect.DefaultWriteTimeout), "longest one write of a streamed answer may take; a client that stops reading loses its request (and slot) then (TADPOLE_WRITE_TIMEOUT)")
	debugAddr := fs.String("debug-addr", env("TADPOLE_DEBUG_ADDR", ""), "address to serve Go's pprof profiles on (/debug/pprof/), e.g. 127.0.0.1:6060; off when empty (TADPOLE_DEBUG_ADDR)")
	apiFlags := addAPIFlags(fs)
	boundary := addBoundaryFlags(fs)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: tadpole serve [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	if err := setupLogging(*logLevel, *logFormat); err != nil {
		return err
	}
	var ka api.Duration
	if err := ka.UnmarshalJSON([]byte(strconv.Quote(*keepAlive))); err != nil {
		return fmt.Errorf("--keep-alive: %w", err)
	}
	fa, err := parseFlash(*flash)
	if err != nil {
		return err
	}
	if err := checkServeLimits(*parallel, *numCtx, *maxCtx, *threads); err != nil {
		return err
	}
	engine.Init(backendDir(*backends))
	ggmlGPUs := 0
	for _, d := range engine.Devices() {
		slog.Info("device", "name", d.Name, "description", d.Description, "type", d.Type,
			"free_mib", d.FreeBytes>>20, "total_mib", d.TotalBytes>>20)
		if d.Type == "gpu" {
			ggmlGPUs++
		}
	}
	// Cross-check NVML's inventory (placement) with ggml's devices (where
	// layers can actually go).
	nvmlGPUs, err := gpu.NVML().Devices()
	if err != nil {
		slog.Warn("NVML inventory failed", "error", err)
	}
	for _, d := range nvmlGPUs {
		slog.Info("gpu", "index", d.Index, "name", d.Name, "uuid", d.UUID, "free_mib", d.FreeBytes>>20,
			"total_mib", d.TotalBytes>>20, "driver", d.Driver, "cuda", d.CUDA)
	}
	switch {
	case len(nvmlGPUs) > 0 && ggmlGPUs == 0:
		slog.Warn("NVML sees GPUs but no GPU backend is loaded: models run on the CPU (see --backends)", "nvml_gpus", len(nvmlGPUs))
	case ggmlGPUs > 0 && len(nvmlGPUs) != ggmlGPUs:
		slog.Warn("NVML and ggml disagree on the number of GPUs", "nvml", len(nvmlGPUs), "ggml", ggmlGPUs)
	}
	slog.Info("engine", "version", engine.Version, "cpu_flags", engine.BuildFlags, "system", engine.SystemInfo())

	cfg := server.Config{
		ModelsDir: *modelsDir,
		Sched: sched.Config{
			Parallel: *parallel, NumCtx: *numCtx, MaxLoaded: *maxLoaded, KeepAlive: ka.Duration,
			MaxCtx: *maxCtx, Threads: *threads, FlashAttn: fa, KVType: *kvType, MaxQueue: *maxQueue,
		},
	}
	if *writeTimeout <= 0 {
		return fmt.Errorf("--write-timeout must be positive, not %s", *writeTimeout)
	}
	cfg.WriteTimeout = *writeTimeout
	if err := apiFlags.apply(&cfg); err != nil {
		return err
	}
	if err := applyStoreFlags(&cfg, *allowRegistry, *maxBlob, *minFree); err != nil {
		return err
	}
	if *origins != "" {
		cfg.CORSOrigins = append([]string(nil), server.DefaultCORSOrigins...)
		for _, o := range strings.Split(*origins, ",") {
			if o = strings.TrimSpace(o); o != "" {
				cfg.CORSOrigins = append(cfg.CORSOrigins, o)
			}
		}
	}
	addr := listenAddr(*host)
	cert, err := boundary.apply(&cfg, addr)
	if err != nil {
		return err
	}
	srv := server.New(cfg)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	slog.Info("Tadpole is listening", "addr", ln.Addr().String(), "tls", cert != nil, "models", *modelsDir, "parallel", *parallel)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 3)
	go func() { errc <- srv.Serve(ln) }()
	if err := boundary.serveMetrics(srv, errc); err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	if _, err := serveDebug(*debugAddr, errc); err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	reloadOnHUP(ctx, cert)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	slog.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
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
