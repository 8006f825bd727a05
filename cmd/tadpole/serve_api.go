package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/gommon/bytes"
	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/media"
)

// apiFlags are the serve flags of API keys, request limits and jobs.
type apiFlags struct {
	keysFile, maxBody, dataDir, retention *string
	rate, streams, workers                *int
	// the job limits
	jobTimeout                *string
	jobMaxTokens, jobQueueKey *int
	// the Responses API
	responsesTTL *string
	// images and audio
	maxImages, maxImagePixels *int
	maxDecodeMemory           *string
	allowImageURLs            *bool
	// the job database (serve_db.go)
	db *dbFlags
	// the prompt cache and drafting (serve_decode.go)
	decode *decodeFlags
}

func addAPIFlags(fs *pflag.FlagSet) *apiFlags {
	return &apiFlags{
		keysFile:  fs.String("api-keys-file", env("TADPOLE_API_KEYS_FILE", ""), "file of API keys, one a line (or sha256:<hex> of a key); with any key (here or in TADPOLE_API_KEYS, comma-separated) every request needs one (TADPOLE_API_KEYS_FILE)"),
		rate:      fs.Int("rate-limit", envInt("TADPOLE_RATE_LIMIT", 0), "requests per minute per API key; 0: no limit (TADPOLE_RATE_LIMIT)"),
		streams:   fs.Int("max-streams", envInt("TADPOLE_MAX_STREAMS", 0), "concurrent generation (POST) requests per API key; 0: no limit (TADPOLE_MAX_STREAMS)"),
		maxBody:   fs.String("max-body", env("TADPOLE_MAX_BODY", "10MiB"), "largest request body, e.g. 10MiB or 1MB; larger ones get 413 (TADPOLE_MAX_BODY)"),
		dataDir:   fs.String("data-dir", env("TADPOLE_DATA_DIR", ""), "directory of the job database (default: \"data\" beside the models directory) (TADPOLE_DATA_DIR)"),
		workers:   fs.Int("job-workers", envInt("TADPOLE_JOB_WORKERS", 2), "jobs run at once (TADPOLE_JOB_WORKERS)"),
		retention: fs.String("job-retention", env("TADPOLE_JOB_RETENTION", "168h"), "how long finished jobs are kept, e.g. 72h or 30d; 0: forever (TADPOLE_JOB_RETENTION)"),
		jobTimeout: fs.String("job-timeout", env("TADPOLE_JOB_TIMEOUT", "30m"),
			"longest run of one job; a job past it fails with \"deadline exceeded\"; 0: no limit (TADPOLE_JOB_TIMEOUT)"),
		jobMaxTokens: fs.Int("job-max-tokens", envInt("TADPOLE_JOB_MAX_TOKENS", 4096),
			"most tokens a job may generate: jobs asking for more or for no limit get 400, jobs without num_predict get at most this; 0: no limit (TADPOLE_JOB_MAX_TOKENS)"),
		jobQueueKey: fs.Int("job-queue-per-key", envInt("TADPOLE_JOB_QUEUE_PER_KEY", 64),
			"most queued jobs per API key (all clients share one quota without keys); more get 429; 0: no limit (TADPOLE_JOB_QUEUE_PER_KEY)"),
		responsesTTL: fs.String("responses-ttl", env("TADPOLE_RESPONSES_TTL", "30d"),
			"how long stored responses of the Responses API (/v1/responses) are kept, e.g. 72h or 30d (TADPOLE_RESPONSES_TTL)"),
		maxImages: fs.Int("max-images", envInt("TADPOLE_MAX_IMAGES", infer.DefaultMaxImages),
			"most images and audio clips in one request; more get 400 (TADPOLE_MAX_IMAGES)"),
		maxImagePixels: fs.Int("max-image-pixels", envInt("TADPOLE_MAX_IMAGE_PIXELS", media.DefaultMaxPixels),
			"largest image in pixels (width × height), checked before it is decoded, at most the vision encoder's 33554432 (its default); larger ones get 400 (TADPOLE_MAX_IMAGE_PIXELS)"),
		maxDecodeMemory: fs.String("max-image-decode-memory", env("TADPOLE_MAX_IMAGE_DECODE_MEMORY", "1GiB"),
			"memory the images of all requests may take at once while decoded, e.g. 1GiB: more wait their turn (503 when --max-queue already wait), a request that alone needs more gets 400 (TADPOLE_MAX_IMAGE_DECODE_MEMORY)"),
		allowImageURLs: fs.Bool("allow-image-urls", envBool("TADPOLE_ALLOW_IMAGE_URLS"),
			"fetch the images requests name by http(s) URL: public addresses only (checked at connect time), at most --max-body bytes and 10s each, 3 redirects, --max-images a request; off, such URLs get 400 (TADPOLE_ALLOW_IMAGE_URLS)"),
		db:     addDBFlags(fs),
		decode: addDecodeFlags(fs),
	}
}

// apply opens what the flags configure into cfg: the API keys (from the
// file and TADPOLE_API_KEYS), the body limit and the job store.
func (f *apiFlags) apply(cfg *server.Config) error {
	keys, err := auth.LoadKeys(*f.keysFile, env("TADPOLE_API_KEYS", ""))
	if err != nil {
		return err
	}
	cfg.Auth, err = auth.New(auth.Config{Keys: keys, Rate: *f.rate, MaxStreams: *f.streams})
	if err != nil {
		return err
	}
	if cfg.Auth.Enabled() {
		slog.Info("API keys required", "keys", len(keys), "rate_limit_per_minute", *f.rate, "max_streams", *f.streams)
	}
	n, err := bytes.Parse(*f.maxBody)
	if err != nil || n <= 0 {
		return fmt.Errorf("--max-body: want a size such as 10MiB, not %q", *f.maxBody)
	}
	cfg.MaxBody = n
	retention, err := parseRetention(*f.retention)
	if err != nil {
		return err
	}
	if *f.workers < 1 {
		return fmt.Errorf("--job-workers must be at least 1")
	}
	jobTimeout, err := time.ParseDuration(*f.jobTimeout)
	if err != nil || jobTimeout < 0 {
		return fmt.Errorf("--job-timeout: want a duration such as 30m or 2h (0: no limit), not %q", *f.jobTimeout)
	}
	if *f.jobMaxTokens < 0 {
		return fmt.Errorf("--job-max-tokens must be 0 (no limit) or more, not %d", *f.jobMaxTokens)
	}
	if *f.jobQueueKey < 0 {
		return fmt.Errorf("--job-queue-per-key must be 0 (no limit) or more, not %d", *f.jobQueueKey)
	}
	ttl, err := parseRetention(*f.responsesTTL)
	if err != nil || ttl <= 0 {
		return fmt.Errorf("--responses-ttl: want a positive duration such as 720h or 30d, not %q", *f.responsesTTL)
	}
	cfg.ResponsesTTL = ttl
	if *f.maxImages < 1 {
		return fmt.Errorf("--max-images must be at least 1, not %d", *f.maxImages)
	}
	if *f.maxImagePixels < 1 || *f.maxImagePixels > media.MaxPixels {
		return fmt.Errorf("--max-image-pixels must be 1 to %d (the vision encoder's limit), not %d", media.MaxPixels, *f.maxImagePixels)
	}
	cfg.MaxImages, cfg.MaxImagePixels = *f.maxImages, *f.maxImagePixels
	if cfg.MaxImageDecodeMemory, err = bytes.Parse(*f.maxDecodeMemory); err != nil || cfg.MaxImageDecodeMemory <= 0 {
		return fmt.Errorf("--max-image-decode-memory: want a size such as 1GiB, not %q", *f.maxDecodeMemory)
	}
	cfg.AllowImageURLs = *f.allowImageURLs
	if cfg.AllowImageURLs {
		slog.Info("image URLs are fetched", "max_bytes", cfg.MaxBody, "max_per_request", cfg.MaxImages)
	}
	dir := *f.dataDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(filepath.Clean(cfg.ModelsDir)), "data")
	}
	cfg.DataDir = dir // the in-flight file and crash reports (server/flight)
	if cfg.Sched.PromptCache, err = f.decode.open(dir); err != nil {
		return err
	}
	cfg.Sched.SWAFull = *f.decode.swaFull
	if cfg.Sched.DraftMax, err = f.decode.draft(); err != nil {
		return err
	}
	if cfg.Drafts, err = f.decode.draftModels(); err != nil {
		return err
	}
	jc := jobs.Config{Dir: dir, Retention: retention, Deadline: jobTimeout, MaxQueuedPerOwner: *f.jobQueueKey}
	where, err := f.db.apply(&jc)
	if err != nil {
		return err
	}
	cfg.Jobs, err = jobs.Open(jc)
	if err != nil {
		return err
	}
	// Replicas sharing PostgreSQL pool their per-key usage there.
	cfg.Jobs.ShareUsage(cfg.Auth.Usage())
	cfg.JobWorkers, cfg.JobMaxTokens = *f.workers, *f.jobMaxTokens
	slog.Info("jobs", "database", where, "workers", *f.workers, "retention", retention,
		"timeout", jobTimeout, "max_tokens", *f.jobMaxTokens, "queue_per_key", *f.jobQueueKey)
	return nil
}

// parseRetention reads a duration, also in days ("30d").
func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 {
			return time.Duration(n * 24 * float64(time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--job-retention: want a duration such as 168h or 7d, not %q", s)
	}
	return d, nil
}

// envBool reads a boolean variable (1, true, 0, false …; unset: false).
func envBool(name string) bool {
	s := env(name, "")
	if s == "" {
		return false
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		envErrors = append(envErrors, fmt.Errorf("%s=%q: not a boolean (true or false)", name, s))
		return false
	}
	return v
}
