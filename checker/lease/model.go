package lease

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"splitbrain/checker/search"
)

// MutexOp is what a lease-lock operation does to the mutex.
type MutexOp string

const (
	// OpAcquire takes the lock; it is legal only when the lock is free.
	OpAcquire MutexOp = "acquire"
	// OpExpire is the instant a client stops believing it holds the lock
	// (validity deadline or release, whichever came first); it is legal only
	// for the holder.
	OpExpire MutexOp = "expire"
)

// MutexInput is the input of one porcupine operation of the lease-lock check.
// The output is always nil: the check only feeds operations the client saw
// succeed.
type MutexInput struct {
	Op     MutexOp
	Client string
	Key    string
}

// MutexModel is a porcupine model of one mutex per key. Its state is the
// holder's name, "" when free. A history is linearizable against it exactly
// when no two clients' belief intervals on one key can be ordered without
// overlapping.
//
// Partition splits by key and, within a key, at quiescent points (every
// earlier operation returned before the next one is called, and every acquire
// so far has its expire): the checker's memory grows with the square of a
// partition's length, and a lock that is free with nothing in flight starts
// each piece from the initial state. The pieces are then packed into batches
// of up to search.BatchOps operations, because porcupine runs one goroutine per
// partition and a long history has hundreds of thousands of pieces; a batch
// of pieces separated by quiescent points is linearizable exactly when each
// piece is.
func MutexModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionMutex,
		Init:      func() interface{} { return "" },
		Step:      stepMutex,
		Equal:     func(a, b interface{}) bool { return a == b },
		DescribeOperation: func(input, _ interface{}) string {
			in, ok := input.(MutexInput)
			if !ok {
				return fmt.Sprintf("%v", input)
			}
			return fmt.Sprintf("%s(%s) on %q", in.Op, in.Client, in.Key)
		},
		DescribeState: func(state interface{}) string {
			if s, ok := state.(string); ok && s != "" {
				return "held by " + s
			}
			return "free"
		},
		DescribeOperationMetadata: search.DescribeMeta,
	}
}

// stepMutex answers "not legal" rather than panicking on foreign values: a
// panic inside porcupine's worker goroutines cannot be recovered by Check.
func stepMutex(state, input, _ interface{}) (bool, interface{}) {
	holder, ok1 := state.(string)
	in, ok2 := input.(MutexInput)
	if !ok1 || !ok2 {
		return false, state
	}
	switch in.Op {
	case OpAcquire:
		if holder == "" {
			return true, in.Client
		}
	case OpExpire:
		if holder == in.Client {
			return true, ""
		}
	}
	return false, state
}

func partitionMutex(ops []porcupine.Operation) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	for _, group := range byKey(ops) {
		// The pieces of a key are adjacent in group, so a batch is a
		// subslice of it: nothing is copied. A batch closes once it
		// holds search.BatchOps operations.
		cuts := quiescentCuts(group)
		start := 0
		for _, c := range cuts[1:] {
			if c-start >= search.BatchOps {
				out = append(out, group[start:c:c])
				start = c
			}
		}
		if start < len(group) {
			out = append(out, group[start:])
		}
	}
	return out
}

// searched is what porcupine has to search of ops: the pieces (of one key,
// between quiescent points) that do not linearize in the order a lock that
// kept its promise gives them (linearizes). Most pieces of a long history
// do: porcupine is spared building and searching them, which was most of
// the check's time and garbage, and searches the rest as it would have.
// Ops is sorted in place by key and call.
func searched(ops []porcupine.Operation) []porcupine.Operation {
	var out, scratch []porcupine.Operation
	for _, group := range byKey(ops) {
		cuts := quiescentCuts(group)
		for i, c := range cuts {
			end := len(group)
			if i+1 < len(cuts) {
				end = cuts[i+1]
			}
			var ok bool
			if ok, scratch = linearizes(group[c:end], scratch); !ok {
				out = append(out, group[c:end]...)
			}
		}
	}
	return out
}

// linearizes reports whether a piece, which starts from the free lock,
// linearizes with each acquire at its return and each expire at its
// instant: the order of a lock that kept its promise. Success is a
// linearization, so porcupine would find one too. At one instant, the
// holder's expire comes first, then each acquire whose expire is at that
// instant too, followed by it, then at most one acquire that holds on.
// scratch is reused from call to call.
func linearizes(piece, scratch []porcupine.Operation) (bool, []porcupine.Operation) {
	point := func(op porcupine.Operation) int64 {
		if opOf(op) == OpAcquire {
			return op.Return
		}
		return op.Call
	}
	ops := append(scratch[:0], piece...)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(point(a), point(b)) })
	holder := ""
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && point(ops[j]) == point(ops[i]) {
			j++
		}
		group := ops[i:j]
		if len(group) > 64 {
			return false, ops
		}
		var used uint64
		find := func(op MutexOp, client string) int {
			for k := range group {
				if used&(1<<k) == 0 && opOf(group[k]) == op && (client == "" || inputOf(group[k]).Client == client) {
					return k
				}
			}
			return -1
		}
		for n := 0; n < len(group); n++ {
			if holder != "" {
				k := find(OpExpire, holder)
				if k < 0 {
					return false, ops
				}
				used |= 1 << k
				holder = ""
				continue
			}
			k := -1
			for a := range group {
				if used&(1<<a) == 0 && opOf(group[a]) == OpAcquire && find(OpExpire, inputOf(group[a]).Client) >= 0 {
					k = a
					break
				}
			}
			if k < 0 {
				k = find(OpAcquire, "")
			}
			if k < 0 {
				return false, ops // an expire of no holder
			}
			used |= 1 << k
			holder = inputOf(group[k]).Client
		}
		i = j
	}
	return true, ops
}

// mutexPieces splits by key, then at quiescent points.
func mutexPieces(ops []porcupine.Operation) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	for _, group := range byKey(ops) {
		out = append(out, splitQuiescent(group)...)
	}
	return out
}

// byKey groups operations by key, in key order. The checker builds them
// grouped already, so that case only slices.
func byKey(ops []porcupine.Operation) [][]porcupine.Operation {
	var groups [][]porcupine.Operation
	seen := map[string]bool{}
	start := 0
	grouped := true
	for i := 1; i <= len(ops) && grouped; i++ {
		if i < len(ops) && inputOf(ops[i]).Key == inputOf(ops[start]).Key {
			continue
		}
		k := inputOf(ops[start]).Key
		if seen[k] {
			grouped = false
			break
		}
		seen[k] = true
		groups = append(groups, ops[start:i:i])
		start = i
	}
	if grouped {
		slices.SortFunc(groups, func(a, b []porcupine.Operation) int {
			return strings.Compare(inputOf(a[0]).Key, inputOf(b[0]).Key)
		})
		return groups
	}
	m := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := inputOf(op).Key
		m[k] = append(m[k], op)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	groups = groups[:0]
	for _, k := range keys {
		groups = append(groups, m[k])
	}
	return groups
}

// splitQuiescent sorts ops by call and cuts them into pieces at quiescent
// points.
func splitQuiescent(ops []porcupine.Operation) [][]porcupine.Operation {
	cuts := quiescentCuts(ops)
	out := make([][]porcupine.Operation, len(cuts))
	for i, c := range cuts {
		end := len(ops)
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		out[i] = ops[c:end:end]
	}
	return out
}

// quiescentCuts sorts ops by call and returns where each piece starts.
func quiescentCuts(ops []porcupine.Operation) []int {
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int {
		if a.Call != b.Call {
			return cmp.Compare(a.Call, b.Call)
		}
		// An acquire and its zero-length expire can share a call time;
		// the acquire must come first for the balance to stay meaningful.
		ai, bi := opOf(a) == OpAcquire, opOf(b) == OpAcquire
		switch {
		case ai && !bi:
			return -1
		case bi && !ai:
			return 1
		}
		return 0
	})
	if len(ops) == 0 {
		return nil
	}
	cuts := []int{0}
	balance := 0
	var maxReturn int64
	for i, op := range ops {
		// Closed intervals: an operation called at the instant another
		// returns is concurrent with it, so the cut needs a strict gap.
		if i > cuts[len(cuts)-1] && balance == 0 && maxReturn < op.Call {
			cuts = append(cuts, i)
		}
		maxReturn = max(maxReturn, op.Return)
		switch opOf(op) {
		case OpAcquire:
			balance++
		case OpExpire:
			balance--
		}
	}
	return cuts
}

func opOf(op porcupine.Operation) MutexOp {
	if in, ok := op.Input.(MutexInput); ok {
		return in.Op
	}
	return ""
}
