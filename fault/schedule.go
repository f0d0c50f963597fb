package fault

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"splitbrain/history"
)

// What a random schedule may do, as named in scenario files.
const (
	RandomPartition   = KindPartition   // a partition of a random shape
	RandomClock       = "clock"         // clock jumps, or a strobe
	RandomPause       = KindPause       // node pauses (SIGSTOP)
	RandomKill        = KindKill        // kill -9 or graceful stop, then restart
	RandomAmnesia     = "amnesia"       // kill -9, restart with the data lost
	RandomClientPause = KindClientPause // client pauses at a hook point
	RandomClockRate   = KindClockRate   // clocks that run fast or slow
	RandomPower       = "power"         // kill -9 and a power loss: what was not fsynced is lost
	RandomStarve      = KindStarve      // servers get a small share of one CPU
	RandomFsync       = "fsync"         // disks slow: each fsync waits out the fault
	RandomLostReply   = KindLostReply   // a client's next reply from some nodes lost
)

// RandomKinds lists the kinds a schedule can draw from.
var RandomKinds = []string{RandomPartition, RandomClock, RandomPause, RandomKill, RandomAmnesia, RandomClientPause, RandomClockRate, RandomPower, RandomStarve, RandomLostReply, RandomFsync}

// Target is how many nodes (or clients) one fault of a schedule hits.
type Target string

const (
	TargetOne      Target = "one"
	TargetMinority Target = "minority" // (n-1)/2, at least one
	TargetMajority Target = "majority" // n/2+1
	TargetAll      Target = "all"
)

// Targets lists every target.
var Targets = []Target{TargetOne, TargetMinority, TargetMajority, TargetAll}

// ScheduleSpec describes a random schedule, Jepsen's combined nemesis:
// every Interval one fault starts, of a kind drawn from Kinds, against a
// target drawn from Targets, lasting a time drawn from [MinFor, MaxFor].
// Faults never overlap, so one heals before the next begins.
type ScheduleSpec struct {
	Kinds []string
	// Targets to draw from; empty means all four.
	Targets []Target
	// Interval is the time from one fault's start to the next one's.
	Interval time.Duration
	// MinFor and MaxFor bound each fault's duration; MaxFor ≤ Interval.
	MinFor, MaxFor time.Duration
	// Total is how long the schedule runs; no fault outlasts it.
	Total time.Duration
	// MaxClock bounds clock offsets; zero means 10 s.
	MaxClock time.Duration
	// MaxRate bounds a clock rate's error (0.05: from 5 % slow to 5 %
	// fast); zero means DefaultMaxRate.
	MaxRate float64
	// Points are where a client pause may stop a client, drawn with
	// AnyPoint; empty means HookPoints (a client that writes a resource:
	// ResourcePoints).
	Points []Point
}

// MaxPlanned bounds the faults one schedule draws: a schedule of a fault
// every millisecond for a day would be 86 million faults, taking the
// machine's memory before the run began (one took 24 GB). Ten thousand is
// a fault every 100 ms for over a quarter of an hour.
const MaxPlanned = 10_000

// Validate checks the spec; Plan calls it.
func (s ScheduleSpec) Validate() error {
	var errs []error
	if len(s.Kinds) == 0 {
		errs = append(errs, fmt.Errorf("no fault kinds; want some of %s", strings.Join(RandomKinds, ", ")))
	}
	for _, k := range s.Kinds {
		if !slices.Contains(RandomKinds, k) {
			errs = append(errs, fmt.Errorf("fault kind %q; want one of %s", k, strings.Join(RandomKinds, ", ")))
		}
	}
	for _, p := range s.Points {
		if !ValidPoint(p) || p == AnyPoint {
			errs = append(errs, fmt.Errorf("client pause point %q; want some of after-replies, after-acquire, before-write, before-release", p))
		}
	}
	for _, t := range s.Targets {
		if !slices.Contains(Targets, t) {
			errs = append(errs, fmt.Errorf("target %q; want one of one, minority, majority, all", t))
		}
	}
	switch {
	case s.Interval <= 0:
		errs = append(errs, fmt.Errorf("interval %v, want > 0", s.Interval))
	case s.MinFor <= 0 || s.MaxFor < s.MinFor:
		errs = append(errs, fmt.Errorf("fault duration %v..%v, want 0 < min ≤ max", s.MinFor, s.MaxFor))
	case s.MaxFor > s.Interval:
		errs = append(errs, fmt.Errorf("fault duration up to %v is longer than the interval %v; faults must not overlap", s.MaxFor, s.Interval))
	}
	if s.Total < s.MinFor {
		errs = append(errs, fmt.Errorf("total %v is shorter than one fault (%v)", s.Total, s.MinFor))
	}
	if s.Interval > 0 && s.Total/s.Interval >= MaxPlanned {
		errs = append(errs, fmt.Errorf("%v at one fault every %v draws %d faults, more than the %d a schedule may draw; want a longer interval or a shorter total",
			s.Total, s.Interval, s.Total/s.Interval+1, MaxPlanned))
	}
	if s.MaxClock < 0 {
		errs = append(errs, fmt.Errorf("largest clock offset %v, want ≥ 0", s.MaxClock))
	}
	if s.MaxRate < 0 || (s.MaxRate > 0 && s.MaxRate < 1e-6) || s.MaxRate >= 1-MinClockRate {
		errs = append(errs, fmt.Errorf("largest clock rate error %v, want from 1ppm to below %v (a clock that runs at least %v times real time)", s.MaxRate, 1-MinClockRate, MinClockRate))
	}
	return errors.Join(errs...)
}

// Op is one fault of a schedule, fully drawn: running it needs no more
// randomness, so the same seed gives the same faults.
type Op struct {
	At, For time.Duration // start, from the schedule's start; duration
	Kind    string        // one of RandomKinds
	Target  Target
	Shape   string         // partition
	Links   []history.Link // partition
	Nodes   []string       // clock, pause, kill, amnesia
	Clients []string       // client-pause
	Offsets []time.Duration
	// Rates are a clock-rate op's, one per node: factors of real time.
	Rates []float64
	// Share is a starve op's share of one CPU, for each of its nodes.
	Share float64
	// Strobe is a clock strobe's period (Offsets[0] its delta); zero
	// means the clock op jumps each node by its offset.
	Strobe   time.Duration
	Point    Point // client-pause
	Graceful bool  // kill: SIGTERM rather than SIGKILL
}

func (o Op) String() string {
	s := fmt.Sprintf("%s %s", o.Kind, o.Target)
	switch o.Kind {
	case RandomPartition:
		s = fmt.Sprintf("partition %s: %s", o.Shape, DescribeLinks(o.Links, "✂"))
	case RandomClock:
		if o.Strobe > 0 {
			s += fmt.Sprintf(" %s strobe %s every %v", strings.Join(o.Nodes, ","), FormatOffset(o.Offsets[0]), o.Strobe)
		} else {
			for i, n := range o.Nodes {
				s += fmt.Sprintf(" %s%s", n, FormatOffset(o.Offsets[i]))
			}
		}
	case RandomClockRate:
		for i, n := range o.Nodes {
			s += fmt.Sprintf(" %s×%v", n, o.Rates[i])
		}
	case RandomStarve:
		s += fmt.Sprintf(" %s to %v%% of a CPU", strings.Join(o.Nodes, ","), o.Share*100)
	case RandomLostReply:
		s += fmt.Sprintf(" %s ✉✗ %s", o.Clients[0], strings.Join(o.Nodes, ","))
	case RandomClientPause:
		s += fmt.Sprintf(" %s at %s", strings.Join(o.Clients, ","), o.Point)
	case RandomKill:
		s += " " + strings.Join(o.Nodes, ",")
		if o.Graceful {
			s += " (graceful)"
		}
	default:
		s += " " + strings.Join(o.Nodes, ",")
	}
	return fmt.Sprintf("%s for %v", s, o.For)
}

// Plan draws a schedule for clients and nodes from r.
func Plan(spec ScheduleSpec, clients, nodes []string, r *rand.Rand) ([]Op, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("random schedule: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("random schedule: no nodes")
	}
	if len(clients) == 0 && slices.ContainsFunc(spec.Kinds, func(k string) bool {
		return k == RandomPartition || k == RandomClientPause || k == RandomLostReply
	}) {
		return nil, errors.New("random schedule: partitions, client pauses and lost replies need clients")
	}
	targets := spec.Targets
	if len(targets) == 0 {
		targets = Targets
	}
	maxClock := spec.MaxClock
	if maxClock == 0 {
		maxClock = 10 * time.Second
	}
	var ops []Op
	for at := time.Duration(0); at+spec.MinFor <= spec.Total; at += spec.Interval {
		op := Op{
			At:     at,
			For:    min(draw(r, spec.MinFor, spec.MaxFor), spec.Total-at),
			Kind:   spec.Kinds[r.IntN(len(spec.Kinds))],
			Target: targets[r.IntN(len(targets))],
		}
		switch op.Kind {
		case RandomPartition:
			op.Shape, op.Links = drawPartition(r, op.Target, clients, nodes)
		case RandomClock:
			op.Nodes = pick(r, nodes, op.Target)
			if r.IntN(3) == 0 {
				op.Strobe = draw(r, 10*time.Millisecond, 200*time.Millisecond)
				op.Offsets = []time.Duration{drawOffset(r, maxClock)}
			} else {
				for range op.Nodes {
					op.Offsets = append(op.Offsets, drawOffset(r, maxClock))
				}
			}
		case RandomClockRate:
			op.Nodes = pick(r, nodes, op.Target)
			maxRate := spec.MaxRate
			if maxRate == 0 {
				maxRate = DefaultMaxRate
			}
			for range op.Nodes {
				op.Rates = append(op.Rates, drawRate(r, maxRate))
			}
		case RandomLostReply:
			// One client's links to the target's nodes.
			op.Clients = []string{clients[r.IntN(len(clients))]}
			op.Nodes = pick(r, nodes, op.Target)
		case RandomStarve:
			op.Nodes = pick(r, nodes, op.Target)
			// 1 % to 20 % of one CPU, in whole percent.
			op.Share = float64(1+r.IntN(20)) / 100
		case RandomPause, RandomAmnesia, RandomPower, RandomFsync:
			op.Nodes = pick(r, nodes, op.Target)
		case RandomKill:
			op.Nodes = pick(r, nodes, op.Target)
			op.Graceful = r.IntN(3) == 0
		case RandomClientPause:
			op.Clients = pick(r, clients, op.Target)
			points := spec.Points
			if len(points) == 0 {
				points = HookPoints
			}
			points = append(slices.Clone(points), AnyPoint)
			op.Point = points[r.IntN(len(points))]
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func drawPartition(r *rand.Rand, t Target, clients, nodes []string) (string, []history.Link) {
	shapes := []string{ShapeIsolate, ShapeClient, ShapeRandom}
	if len(nodes) >= 2 {
		shapes = append(shapes, ShapeHalves)
	}
	if len(nodes) >= 3 {
		shapes = append(shapes, ShapeBridge)
	}
	shape := shapes[r.IntN(len(shapes))]
	switch shape {
	case ShapeIsolate:
		return shape, Isolate(clients, pick(r, nodes, t))
	case ShapeClient:
		c := clients[r.IntN(len(clients))]
		return shape, ClientCut(c, pick(r, nodes, t))
	case ShapeHalves:
		links, _ := Halves(Shuffled(clients, r), Shuffled(nodes, r))
		return shape, links
	case ShapeBridge:
		links, _ := Bridge(Shuffled(clients, r), Shuffled(nodes, r))
		return shape, links
	}
	return shape, RandomGrudge(clients, nodes, r)
}

// pick draws t's share of xs, kept in xs's order.
func pick(r *rand.Rand, xs []string, t Target) []string {
	n := len(xs)
	k := map[Target]int{TargetOne: 1, TargetMinority: max(1, (n-1)/2), TargetMajority: n/2 + 1, TargetAll: n}[t]
	chosen := r.Perm(n)[:min(k, n)]
	slices.Sort(chosen)
	out := make([]string, len(chosen))
	for i, j := range chosen {
		out[i] = xs[j]
	}
	return out
}

// draw picks a duration in [lo, hi] in whole milliseconds.
func draw(r *rand.Rand, lo, hi time.Duration) time.Duration {
	steps := int64((hi - lo) / time.Millisecond)
	if steps <= 0 {
		return lo
	}
	return lo + time.Duration(r.Int64N(steps+1))*time.Millisecond
}

// drawOffset picks a clock offset of either sign, from a tenth of max to max.
func drawOffset(r *rand.Rand, max time.Duration) time.Duration {
	d := draw(r, max/10, max)
	if r.IntN(2) == 0 {
		return -d
	}
	return d
}

// DefaultMaxRate is a schedule's largest clock rate error unless it says:
// 5 %, five times Redlock's drift allowance and a hundred times NTP's
// slew limit.
const DefaultMaxRate = 0.05

// drawRate picks a clock rate whose error, of either sign, is from a
// tenth of max to max, in whole parts per million.
func drawRate(r *rand.Rand, max float64) float64 {
	ppm := int64(math.Round(max * 1e6))
	lo := ppm / 10
	if lo < 1 {
		lo = 1
	}
	e := lo + r.Int64N(ppm-lo+1)
	if r.IntN(2) == 0 {
		e = -e
	}
	return 1 + float64(e)/1e6
}
