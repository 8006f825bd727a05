package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/anthropic"
	"github.com/tadpole-llm/tadpole/server/anura"
	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/flight"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/media"
	"github.com/tadpole-llm/tadpole/server/ollama"
	"github.com/tadpole-llm/tadpole/server/openai"
	"github.com/tadpole-llm/tadpole/server/responses"
	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/telemetry"
	"github.com/tadpole-llm/tadpole/server/ui"
)

// Config configures a server.
type Config struct {
	ModelsDir string
	Sched     sched.Config
	// Drafts names each model's draft model for speculative decoding
	// (canonical names: infer.Service.Drafts).
	Drafts map[string]string
	// CORSOrigins are the origins browsers may call the server from
	// ('*' matches anything); empty means DefaultCORSOrigins.
	CORSOrigins []string
	// Auth checks API keys and per-key limits on every route but GET /
	// and /api/version (nil: no keys); model management needs an admin
	// key.
	Auth *auth.Auth
	// Hosts are the names, besides localhost and loopback addresses, that
	// requests on a loopback listener may carry in their Host header (the
	// name the server was told to listen on); see hostGuard.
	Hosts []string
	// TLS, when set, makes Serve and ServeMetrics speak HTTPS (HTTP/2 and
	// HTTP/1.1); see Certificate.TLSConfig.
	TLS *tls.Config
	// MetricsListener moves /metrics off the API onto the listener given
	// to ServeMetrics, where it needs no key.
	MetricsListener bool
	// MaxBody is the largest request body in bytes (0: DefaultMaxBody);
	// blob uploads are exempt.
	MaxBody int64
	// Jobs is the store of the Anura job API (nil: jobs are disabled).
	// The server runs it with JobWorkers workers (default 2) and closes
	// it at Shutdown.
	Jobs       *jobs.Store
	JobWorkers int
	// JobMaxTokens is the most tokens an ollama job may generate; more,
	// or unlimited, is refused at submission (0: no limit).
	JobMaxTokens int
	// AllowRegistries are the registries ("host" or "host:port") that
	// pulls and pushes may reach at loopback, link-local, private,
	// unspecified or multicast addresses; others must be public.
	AllowRegistries []string
	// MaxBlobSize is the largest blob an upload or pull may store, and
	// MinFreeDisk the free space writes must leave on the models disk,
	// in bytes (0: no limit).
	MaxBlobSize, MinFreeDisk int64
	// WriteTimeout bounds each write of a streamed answer (0:
	// dialect.DefaultWriteTimeout): a client that stops reading loses its
	// request, and its slot, when a write cannot finish in time.
	WriteTimeout time.Duration
	// ReadTimeout, MinBodyRate and IdleTimeout bound every listener's
	// connections (timeouts.go; 0: the Default*, negative: none): a
	// request body may pause at most ReadTimeout and must average
	// MinBodyRate bytes a second past it; a keep-alive connection is
	// closed after IdleTimeout without a request.
	ReadTimeout, IdleTimeout time.Duration
	MinBodyRate              int64
	// ResponsesTTL is how long the Responses API keeps stored responses
	// (0: responses.DefaultTTL, 30 days).
	ResponsesTTL time.Duration
	// MaxImages bounds the images and audio clips of one request (0:
	// infer.DefaultMaxImages) and MaxImagePixels each image's width ×
	// height (0: media.DefaultMaxPixels); more is a 400.
	MaxImages, MaxImagePixels int
	// MaxImageDecodeMemory bounds the memory that decoding the images of
	// every request in flight takes at once (0:
	// infer.DefaultMaxDecodeMemory): more waits its turn, a request that
	// alone needs more is a 400 (infer.DecodeBudget).
	MaxImageDecodeMemory int64
	// AllowImageURLs lets requests name images by http(s) URL, which the
	// server then fetches (media.Fetcher: public addresses only, checked
	// at connect time; at most MaxBody bytes an image, 10 s, 3 redirects,
	// MaxImages URLs a request). Off, such URLs are a 400.
	AllowImageURLs bool
	// MetricsCompat also exports the model-server gauges (waiting and
	// running requests, KV-cache use) under another server's names
	// (--metrics-compat vllm).
	MetricsCompat telemetry.Compat
	// Preload are the models Preload loads (keep_alive forever); /readyz
	// answers 503 until they are loaded.
	Preload []string
	// DataDir is where the in-flight file lives (package flight): the
	// requests and jobs in flight, named at the next start if the process
	// dies ("": kept in memory only, for the report of a ggml abort).
	DataDir string
	// imageURLHosts may be fetched at any address (media.Fetcher.Allow):
	// for tests, whose servers listen on loopback.
	imageURLHosts []string
}

// imageFetcher fetches image URLs when cfg allows them; nil otherwise.
func imageFetcher(cfg Config) *media.Fetcher {
	if !cfg.AllowImageURLs {
		return nil
	}
	return &media.Fetcher{MaxBytes: cfg.MaxBody, MaxFetches: cfg.MaxImages, Allow: cfg.imageURLHosts}
}

// Server serves every API dialect over one model store and scheduler.
type Server struct {
	echo      *echo.Echo
	sched     *sched.Scheduler
	telemetry *telemetry.Telemetry
	mu        sync.Mutex // guards http: Serve and Shutdown may run on different goroutines
	http      *http.Server
	jobs      *jobs.Store
	tls       *tls.Config
	hosts     []string
	metrics   metricsServer
	infer     *infer.Service
	drain     drainState
	preload   preloadState
	flights   *flight.Log // the requests and jobs in flight
	timeouts  connTimeouts
	auth      *auth.Auth // for what public routes show only to a key holder
}

// New builds a server; it loads no model until a request needs one.
func New(cfg Config) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.RequestID())
	e.Use(middleware.Recover())
	allowed := newOrigins(cfg.CORSOrigins)
	e.Use(hostGuard(cfg.Hosts), originGuard(allowed, cfg.Hosts), cors(allowed))
	e.HTTPErrorHandler = dialect.ErrorHandler(ollama.ErrorHandler)
	s := &Server{echo: e, sched: sched.New(cfg.Sched), tls: cfg.TLS, hosts: cfg.Hosts, preload: preloadState{names: cfg.Preload}}
	s.flights = openFlights(cfg.DataDir)
	s.auth = cfg.Auth
	s.timeouts = timeoutsOf(cfg)
	src := telemetry.Sources{Sched: s.sched, GPUs: s.sched.Config().GPUs, Compat: cfg.MetricsCompat}
	if cfg.Auth.Enabled() {
		src.Usage = cfg.Auth.Usage()
	}
	tel, err := telemetry.New(src)
	if err != nil {
		slog.Error("telemetry disabled", "error", err)
	}
	s.telemetry = tel
	e.Use(s.requestLog, s.drainGuard, bodyTypeGuard, cfg.Auth.Middleware(), flightKey, bodyLimit(cfg.MaxBody))
	if cfg.WriteTimeout > 0 {
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				c.Set(dialect.WriteTimeoutKey, cfg.WriteTimeout)
				return next(c)
			}
		})
	}
	if tel != nil && !cfg.MetricsListener {
		e.GET("/metrics", echo.WrapHandler(tel.Handler()))
	}
	store := &models.Store{Dir: cfg.ModelsDir, MaxBlobSize: cfg.MaxBlobSize, MinFreeDisk: cfg.MinFreeDisk}
	svc := &infer.Service{Store: store, Sched: s.sched, Telemetry: tel, Drafts: cfg.Drafts,
		MediaLimits: infer.MediaLimits{MaxImages: cfg.MaxImages, MaxImagePixels: cfg.MaxImagePixels, Fetcher: imageFetcher(cfg),
			Budget: infer.NewDecodeBudget(cfg.MaxImageDecodeMemory, s.sched.Config().MaxQueue)}}
	s.infer = svc
	(&ollama.Handler{Store: store, Infer: svc, AllowRegistries: cfg.AllowRegistries}).Register(e)
	s.registerHealth(e)
	ui.Register(e) // the web console at /ui/
	oa := &openai.Handler{Infer: svc, Store: store}
	oa.RegisterV1(e.Group("/v1", openai.Errors))
	(&anthropic.Handler{Infer: svc}).Register(e) // /v1/messages: Anthropic's, with its own error shape
	oa.RegisterWebUI(e.Group("/api/chat/completions", openai.Errors))
	oa.RegisterLlamaServer(e) // /tokenize, /detokenize, /apply-template
	oa.RegisterLoRA(e)        // /lora-adapters
	an := &anura.Handler{Store: store, Infer: svc, Jobs: cfg.Jobs, Usage: cfg.Auth.Usage(), JobMaxTokens: cfg.JobMaxTokens}
	an.Register(e)
	rs := &responses.Handler{Infer: svc, Jobs: cfg.Jobs, TTL: cfg.ResponsesTTL, Usage: cfg.Auth.Usage()}
	rs.Register(e)
	if s.jobs = cfg.Jobs; s.jobs != nil {
		workers := cfg.JobWorkers
		if workers <= 0 {
			workers = 2
		}
		s.jobs.Start(workers, func(ctx context.Context, j *jobs.Job) ([]byte, error) {
			slot := s.flights.Begin(j.ID, "job "+j.Type, int64(len(j.Request)))
			defer slot.End()
			slot.SetKey(j.Owner)
			ctx = flight.NewContext(ctx, slot)
			if j.Type == responses.JobType {
				return rs.RunJob(ctx, j)
			}
			return an.RunJob(ctx, j)
		})
	}
	return s
}

// Handler is the server's HTTP handler (for tests with httptest).
func (s *Server) Handler() http.Handler { return s.echo }

// Serve accepts connections on ln until Shutdown, over TLS when
// Config.TLS is set.
func (s *Server) Serve(ln net.Listener) error {
	hs := s.timeouts.httpServer(s.echo)
	hs.ConnContext, hs.TLSConfig = withListener(ln.Addr()), s.tls.Clone()
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	err := serveOn(hs, ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting requests, waits for running ones until ctx
// ends (then cuts them), then unloads every model. Drain first to refuse
// new requests while the listener is still open.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.mu.Lock()
	hs := s.http
	s.mu.Unlock()
	if hs != nil {
		if err = hs.Shutdown(ctx); err != nil {
			hs.Close() // ctx ended: cut the requests still running
		}
	}
	s.metrics.shutdown(ctx)
	if s.jobs != nil {
		s.jobs.Close() // running jobs go back to the queue
	}
	s.sched.Close()
	if s.telemetry != nil {
		s.telemetry.Shutdown(ctx)
	}
	s.flights.Close() // a clean stop: nothing to report at the next start
	return err
}

// The report the engine writes if llama.cpp aborts the process lists
// the requests and jobs in flight of every server (package flight).
func init() { engine.OnAbort(flight.Lines) }

// openFlights opens the in-flight file in dir (memory only without one,
// or when it cannot be opened).
func openFlights(dir string) *flight.Log {
	if dir == "" {
		return flight.Memory()
	}
	l, _, err := flight.Open(dir) // reports what a death left there
	if err != nil {
		slog.Warn("in-flight file", "error", err)
	}
	return l
}

// flightKey records the request's API key id in its in-flight slot.
func flightKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		flight.FromContext(ctx).SetKey(auth.KeyID(ctx))
		return next(c)
	}
}

// requestLog logs, counts and traces every request. Handlers that know
// the model put its name in the context under "model".
func (s *Server) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		slot := s.flights.Begin(c.Response().Header().Get(echo.HeaderXRequestID), req.Method+" "+req.URL.Path, req.ContentLength)
		defer slot.End()
		ctx, span := s.telemetry.Start(flight.NewContext(req.Context(), slot), req.Method+" "+c.Path())
		c.SetRequest(req.WithContext(ctx))
		err := next(c)
		res := c.Response()
		status := res.Status
		if clientGone(req.Context(), res, slot) { // clientgone.go: 499, never the 500 of a cancellation
			status = StatusClientClosedRequest
		} else if err != nil {
			c.Error(err)
			status = res.Status
		}
		model, _ := c.Get("model").(string)
		s.telemetry.Request(ctx, c.Path(), model, status)
		span.SetAttributes(attribute.Int("http.status_code", status), attribute.String("model", model))
		span.End()
		slog.Info("request", "method", req.Method, "path", req.URL.Path, "status", status, "model", model,
			"took", time.Since(start).Round(time.Microsecond), "id", res.Header().Get(echo.HeaderXRequestID))
		return nil
	}
}
