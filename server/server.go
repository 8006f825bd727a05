package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollama"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// Config configures a server.
type Config struct {
	ModelsDir string
	Sched     sched.Config
}

// Server serves every API dialect over one model store and scheduler.
type Server struct {
	echo  *echo.Echo
	sched *sched.Scheduler
	http  *http.Server
}

// New builds a server; it loads no model until a request needs one.
func New(cfg Config) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.RequestID())
	e.Use(middleware.Recover())
	e.Use(requestLog)
	e.HTTPErrorHandler = ollama.ErrorHandler
	s := &Server{echo: e, sched: sched.New(cfg.Sched)}
	store := &models.Store{Dir: cfg.ModelsDir}
	h := &ollama.Handler{Store: store, Sched: s.sched, Infer: &infer.Service{Store: store, Sched: s.sched}}
	h.Register(e)
	return s
}

// Handler is the server's HTTP handler (for tests with httptest).
func (s *Server) Handler() http.Handler { return s.echo }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.http = &http.Server{Handler: s.echo, ReadHeaderTimeout: 30 * time.Second}
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting requests, waits for running ones until ctx
// ends, then unloads every model.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	if s.http != nil {
		err = s.http.Shutdown(ctx)
	}
	s.sched.Close()
	return err
}

func requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		slog.Info("request", "method", req.Method, "path", req.URL.Path, "status", res.Status,
			"took", time.Since(start).Round(time.Microsecond), "id", res.Header().Get(echo.HeaderXRequestID))
		return nil
	}
}
