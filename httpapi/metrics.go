package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	inFlight      prometheus.Gauge
	forwarded     prometheus.Counter
	forwardErrors prometheus.Counter
	leaderRetries prometheus.Counter
	batchSize     prometheus.Histogram
	subjectSyncs  prometheus.Counter
	authThrottled prometheus.Counter
	connsRefused  prometheus.Counter
	consoles      prometheus.Gauge
	watches       prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer, conns *connLimiter) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "API requests answered, by method and code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "Time to answer an API request.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_http_requests_in_flight", Help: "API requests being answered.",
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_forwarded_total", Help: "Requests this peer forwarded to the leader or to a VM's host.",
		}),
		forwardErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_forward_errors_total", Help: "Forwarded requests the leader or a VM's host did not answer.",
		}),
		leaderRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_leader_retries_total", Help: "Forwarded requests a former leader refused unrun, sent again to the new leader.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "svc_http_forward_batch_requests", Help: "Writes in each batch this peer forwarded to the leader at once.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
		authThrottled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_auth_throttled_total",
			Help: "Calls refused (429) before any token check: their client had failed authentication too often; they are not in the audit log one by one.",
		}),
		subjectSyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_subject_syncs_total", Help: "Well-signed tokens of a subject this replica did not know, checked again after catching up with the leader.",
		}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_connections_refused_total", Help: "Connections refused for being over the connection limits.",
		}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_watch_streams", Help: "Watches (?watch=true) this peer serves now.",
		}),
		consoles: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_console_sessions", Help: "VM consoles this peer carries now.",
		}),
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "svc_http_connections_open", Help: "Open API connections (HTTP and HTTPS).",
	}, func() float64 { return float64(conns.open()) })
	reg.MustRegister(m.requests, m.duration, m.inFlight, m.forwarded, m.forwardErrors, m.leaderRetries, m.batchSize, m.subjectSyncs, m.authThrottled, m.connsRefused, m.consoles, m.watches, open)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
	// keep, when set, keeps the first bytes of the body, up to its
	// capacity (a sign-in's answer: who signed in, for the audit log).
	keep []byte
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.keep != nil {
		r.keep = append(r.keep, b[:min(len(b), cap(r.keep)-len(r.keep))]...)
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (m *httpMetrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			m.inFlight.Dec()
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(r.Method, strconv.Itoa(code)).Inc()
			m.duration.WithLabelValues(r.Method).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(rec, r)
	})
}
