// Package promadmit is a Prometheus collector for admit: it observes an
// admit.Controller (directly or through httpmw, grpcmw or echomw) and
// exports, per key:
//
//	distsem_admit_in_flight{key}                  gauge: requests holding a permit
//	distsem_admit_waiting{key}                    gauge: requests waiting for one
//	distsem_admit_wait_seconds{key,result}        histogram: time to admit or reject
//	distsem_admit_rejections_total{key,reason}    counter: rejections by reason
//	distsem_admit_lost_leases_total{key}          counter: leases lost while held
//
// result is "admitted" or a rejection reason: "no_capacity", "unavailable"
// or "client_gone".
//
// Label sets stay bounded whatever the keys: only the keys named with
// WithKeys (typically those of the core.WithLimits overrides table) get a
// label value of their own, cut to MaxLabelLen bytes; every other key is
// counted under "other". All series exist from the start, at zero.
//
//	col := promadmit.New(promadmit.WithKeys("GET /work", "GET /report"))
//	prometheus.MustRegister(col)
//	h := httpmw.Handler(work, sem, httpmw.WithObserver(col))
//
// Keeping users who do not want Prometheus from importing it is why this is
// a package of its own.
package promadmit
