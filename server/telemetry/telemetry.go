// Package telemetry is Tadpole's OpenTelemetry setup: metrics exported in
// Prometheus format at /metrics (always), and traces exported over OTLP
// when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) variable is set — otherwise spans are
// not collected.
//
// It records what the rest of the server reports to it; it never drives
// the scheduler or the engine.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/sched"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// Telemetry holds the meter and tracer providers of one server.
type Telemetry struct {
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	tracers  trace.TracerProvider
	shutdown []func(context.Context) error

	Tracer trace.Tracer

	requests   metric.Int64Counter
	tokens     metric.Int64Counter
	ttft       metric.Float64Histogram
	perToken   metric.Float64Histogram
	queueWait  metric.Float64Histogram
	loadTime   metric.Float64Histogram
	generation metric.Int64Counter
}

// Sources are what the observable gauges read at each scrape.
type Sources struct {
	Sched *sched.Scheduler
	GPUs  gpu.Inventory
	Usage usage.Reader // per-API-key counters; nil without keys
	// Compat also exports the model-server gauges under another
	// server's names (see modelServerCollector).
	Compat Compat
}

// New sets up metrics (and traces when OTLP is configured) for a server.
func New(src Sources) (*Telemetry, error) {
	t := &Telemetry{registry: prometheus.NewRegistry()}
	// The Go runtime (go_goroutines, go_memstats_*) and the process
	// (process_resident_memory_bytes, process_open_fds): what a leak shows
	// in first, and what make soak watches.
	t.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), stepCollector{},
		&modelServerCollector{sched: src.Sched, compat: src.Compat}, promptCacheCollector{cache: src.Sched.Config().PromptCache}, nativeHeapCollector{})
	exp, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.shutdown = append(t.shutdown, t.meters.Shutdown)
	m := t.meters.Meter("tadpole")

	t.tracers = noop.NewTracerProvider()
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		te, err := otlptracehttp.New(context.Background())
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP traces: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(te))
		t.tracers = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	t.Tracer = t.tracers.Tracer("tadpole")

	latency := metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	var first error
	check := func(err error) {
		if first == nil {
			first = err
		}
	}
	var e error
	t.requests, e = m.Int64Counter("tadpole_requests", metric.WithDescription("HTTP requests by endpoint, model and status"))
	check(e)
	t.tokens, e = m.Int64Counter("tadpole_tokens", metric.WithDescription("tokens evaluated (direction=in) and generated (direction=out)"))
	check(e)
	t.generation, e = m.Int64Counter("tadpole_generations", metric.WithDescription("finished generations by model and reason"))
	check(e)
	t.ttft, e = m.Float64Histogram("tadpole_time_to_first_token", metric.WithUnit("s"), metric.WithDescription("time from request to first generated token"), latency)
	check(e)
	t.perToken, e = m.Float64Histogram("tadpole_token_latency", metric.WithUnit("s"), metric.WithDescription("time per generated token"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
	check(e)
	t.queueWait, e = m.Float64Histogram("tadpole_queue_wait", metric.WithUnit("s"), metric.WithDescription("time a request waited for a slot"), latency)
	check(e)
	t.loadTime, e = m.Float64Histogram("tadpole_model_load", metric.WithUnit("s"), metric.WithDescription("model load time"), latency)
	check(e)
	if first != nil {
		return nil, fmt.Errorf("telemetry: %w", first)
	}
	if err := t.observeGauges(m, src); err != nil {
		return nil, err
	}
	if src.Usage != nil {
		if err := observeUsage(m, src.Usage); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// observeGauges registers the gauges read at scrape time: loaded models,
// slots, queue depth per device and NVML's per-GPU state.
func (t *Telemetry) observeGauges(m metric.Meter, src Sources) error {
	var first error
	gauge := func(name string, opts ...metric.Int64ObservableGaugeOption) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, opts...)
		if first == nil {
			first = err
		}
		return g
	}
	loaded := gauge("tadpole_models_loaded", metric.WithDescription("loaded model instances"))
	slotsBusy := gauge("tadpole_slots_busy", metric.WithDescription("slots generating, by model"))
	slotsTotal := gauge("tadpole_slots", metric.WithDescription("slots, by model"))
	queue := gauge("tadpole_queue_depth", metric.WithDescription("requests waiting for a slot, by device (cpu or gpu index)"))
	memUsed := gauge("tadpole_gpu_memory_used", metric.WithUnit("By"))
	memFree := gauge("tadpole_gpu_memory_free", metric.WithUnit("By"))
	util := gauge("tadpole_gpu_utilization", metric.WithUnit("%"))
	temp := gauge("tadpole_gpu_temperature", metric.WithUnit("Cel"))
	power, err := m.Float64ObservableGauge("tadpole_gpu_power", metric.WithUnit("W"))
	if first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		depth := map[string]int64{}
		if src.Sched != nil {
			st := src.Sched.Status()
			o.ObserveInt64(loaded, int64(len(st)))
			for _, in := range st {
				busy, total := in.Runner.Slots()
				model := attribute.String("model", in.Name)
				o.ObserveInt64(slotsBusy, int64(busy), metric.WithAttributes(model))
				o.ObserveInt64(slotsTotal, int64(total), metric.WithAttributes(model))
				dev := "cpu"
				if len(in.Placement.GPUs) > 0 {
					dev = fmt.Sprint(in.Placement.GPUs[0])
				}
				depth[dev] += int64(in.Runner.Waiting())
			}
		}
		if _, ok := depth["cpu"]; !ok {
			depth["cpu"] = 0
		}
		for dev, n := range depth {
			o.ObserveInt64(queue, n, metric.WithAttributes(attribute.String("device", dev)))
		}
		if src.GPUs != nil {
			devs, _ := src.GPUs.Devices()
			for _, d := range devs {
				a := metric.WithAttributes(attribute.Int("gpu", d.Index), attribute.String("name", d.Name), attribute.String("uuid", d.UUID))
				o.ObserveInt64(memUsed, int64(d.TotalBytes-d.FreeBytes), a)
				o.ObserveInt64(memFree, int64(d.FreeBytes), a)
				o.ObserveInt64(util, int64(d.UtilizationPct), a)
				o.ObserveInt64(temp, int64(d.TemperatureC), a)
				o.ObserveFloat64(power, d.PowerWatts, a)
			}
		}
		return nil
	}, loaded, slotsBusy, slotsTotal, queue, memUsed, memFree, util, temp, power)
	return err
}

// observeUsage exports the per-key counters (keys by their id, never the
// key itself).
func observeUsage(m metric.Meter, u usage.Reader) error {
	reqs, err := m.Int64ObservableCounter("tadpole_key_requests", metric.WithDescription("requests by API key id"))
	if err != nil {
		return err
	}
	limited, err := m.Int64ObservableCounter("tadpole_key_rate_limited", metric.WithDescription("requests refused by a key's limits"))
	if err != nil {
		return err
	}
	tokens, err := m.Int64ObservableCounter("tadpole_key_tokens", metric.WithDescription("tokens in (prompt) and out (generated) by API key id"))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range u.Snapshot() {
			key := attribute.String("key", s.Key)
			o.ObserveInt64(reqs, s.Requests, metric.WithAttributes(key))
			o.ObserveInt64(limited, s.RateLimited, metric.WithAttributes(key))
			o.ObserveInt64(tokens, s.TokensIn, metric.WithAttributes(key, attribute.String("direction", "in")))
			o.ObserveInt64(tokens, s.TokensOut, metric.WithAttributes(key, attribute.String("direction", "out")))
		}
		return nil
	}, reqs, limited, tokens)
	return err
}

// Handler serves the metrics in Prometheus' text format.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Methods of a nil *Telemetry do nothing, so tests and tools may run the
// server without it.

// Request counts one HTTP request.
func (t *Telemetry) Request(ctx context.Context, endpoint, model string, status int) {
	if t == nil {
		return
	}
	t.requests.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", endpoint), attribute.String("model", model), attribute.Int("status", status)))
}

// Load records a model load.
func (t *Telemetry) Load(ctx context.Context, model string, took time.Duration) {
	if t == nil {
		return
	}
	t.loadTime.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String("model", model)))
}

// Embedding records an embedding request's evaluated tokens.
func (t *Telemetry) Embedding(ctx context.Context, model string, tokens int) {
	if t == nil {
		return
	}
	t.tokens.Add(ctx, int64(tokens), metric.WithAttributes(attribute.String("model", model), attribute.String("direction", "in")))
}

// Generation records a finished generation's tokens and latencies.
func (t *Telemetry) Generation(ctx context.Context, model string, ev runner.Event) {
	if t == nil {
		return
	}
	a := metric.WithAttributes(attribute.String("model", model))
	st := ev.Stats
	t.tokens.Add(ctx, int64(st.PromptEvalCount), metric.WithAttributes(attribute.String("model", model), attribute.String("direction", "in")))
	t.tokens.Add(ctx, int64(st.EvalCount), metric.WithAttributes(attribute.String("model", model), attribute.String("direction", "out")))
	reason := ev.DoneReason
	if ev.Err != nil && reason == "" {
		reason = "error"
	}
	t.generation.Add(ctx, 1, metric.WithAttributes(attribute.String("model", model), attribute.String("reason", reason)))
	t.queueWait.Record(ctx, st.QueueWait.Seconds(), a)
	if st.EvalCount > 0 {
		t.ttft.Record(ctx, st.TimeToFirstToken.Seconds(), a)
		t.perToken.Record(ctx, st.EvalDuration.Seconds()/float64(st.EvalCount), a)
	}
}

// Start starts a span (a no-op span when traces are off or t is nil).
func (t *Telemetry) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return noop.NewTracerProvider().Tracer("").Start(ctx, name, opts...)
	}
	return t.Tracer.Start(ctx, name, opts...)
}

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var first error
	for _, f := range t.shutdown {
		if err := f(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}
