package chaos

import (
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// lastWrite returns the write a key must show at a read [call, ret] by
// itself: the definite write that ended before `before` and that no other
// write on the key could be ordered after (every other one ended before it
// began, or began after the read returned). ok is false when there is none.
func lastWrite(writes []Op, before, ret int64) (Op, bool) {
	for i := len(writes) - 1; i >= 0; i-- {
		w := writes[i]
		if _, known := w.effect(); !known || w.Return >= before {
			continue
		}
		for j, x := range writes {
			if j != i && x.Return >= w.Call && x.Call <= ret {
				return Op{}, false
			}
		}
		return w, true
	}
	return Op{}, false
}

// writesByKey groups the writes of a history by key, sorted by invocation.
func writesByKey(ops []Op) map[string][]Op {
	out := map[string][]Op{}
	for _, op := range ops {
		if op.IsWrite() {
			out[op.Input.Key] = append(out[op.Input.Key], op)
		}
	}
	return out
}

// lost counts keys whose final read (the reads of client -1) contradicts
// the last acknowledged write on them.
func lost(ops []Op) (n int, keys []string) {
	writes := writesByKey(ops)
	for _, r := range ops {
		if r.Client != -1 || r.IsWrite() {
			continue
		}
		w, ok := lastWrite(writes[r.Input.Key], r.Call, r.Return)
		if !ok {
			continue
		}
		if exists, _ := w.effect(); exists != (r.Result == Present) {
			n++
			keys = append(keys, r.Input.Key)
		}
	}
	return n, keys
}

// stale counts what restarted peers served older than a write acknowledged
// before they restarted.
func stale(ops []Op, probes []Probe) (n int, keys []string) {
	writes := writesByKey(ops)
	for _, p := range probes {
		for key, seen := range p.Tags {
			w, ok := lastWrite(writes[key], p.Restarted, p.Return)
			if !ok {
				continue
			}
			if exists, _ := w.effect(); exists != seen {
				n++
				keys = append(keys, key)
			}
		}
	}
	return n, keys
}

// linearizable checks the history with porcupine. On a violation it names
// the keys whose histories are not linearizable and writes the
// visualization to htmlPath (when not empty).
func linearizable(ops []Op, timeout time.Duration, htmlPath string) (porcupine.CheckResult, []string, error) {
	m := model()
	res, info := porcupine.CheckOperationsVerbose(m, porcupineOps(ops), timeout)
	if res != porcupine.Illegal {
		return res, nil, nil
	}
	var bad []string
	for key, kops := range opsByKey(ops) {
		if !porcupine.CheckOperations(m, porcupineOps(kops)) {
			bad = append(bad, key)
		}
	}
	slices.Sort(bad)
	if htmlPath != "" {
		if err := porcupine.VisualizePath(m, info, htmlPath); err != nil {
			return res, bad, err
		}
	}
	return res, bad, nil
}

func opsByKey(ops []Op) map[string][]Op {
	out := map[string][]Op{}
	for _, op := range ops {
		out[op.Input.Key] = append(out[op.Input.Key], op)
	}
	return out
}

// unavailability is, per fault, the longest time within the fault and the
// recovery after it (until the next fault, at most recovery) during which no
// write sent through another peer than the faulted one got a definite
// answer: how long the cluster could not take writes from clients that can
// reach a healthy peer. Windows end at stop, when the clients stopped.
func unavailability(ops []Op, faults []Fault, recovery time.Duration, stop int64) []time.Duration {
	out := make([]time.Duration, len(faults))
	for i, f := range faults {
		var done []int64
		for _, op := range ops {
			if _, known := op.effect(); op.IsWrite() && known && op.Peer != f.Peer {
				done = append(done, op.Return)
			}
		}
		slices.Sort(done)
		end := min(f.End+int64(recovery), stop)
		if i+1 < len(faults) {
			end = min(end, faults[i+1].Start)
		}
		last, longest := f.Start, int64(0)
		for _, t := range done {
			if t < f.Start {
				continue
			}
			if t > end {
				break
			}
			longest = max(longest, t-last)
			last = t
		}
		longest = max(longest, end-last)
		out[i] = time.Duration(longest)
	}
	return out
}

// percentile returns the p-th percentile (0-100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// lastCall is when the last operation was invoked.
func lastCall(ops []Op) int64 {
	var last int64
	for _, op := range ops {
		last = max(last, op.Call)
	}
	return last
}
