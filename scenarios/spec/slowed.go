package spec

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"splitbrain/locks"
)

// A lock that cannot be asked for a story's TTL — malkusch/lock's keys
// live at least 2 s, Laravel's and tooz's whole seconds — plays the story
// slowed down instead of sitting it out: every duration of the lock, the
// workload and the steps (waits, faults and their lengths, clock jumps,
// random schedules, timeouts) stretched by the one factor that brings the
// TTL to the shortest the lock takes. What a story pits against the TTL —
// a pause that outlasts a lease, a jump that expires a key, a fault that
// ends before a lease does — keeps its proportion, so the story asks the
// same question at the lock's own time scale. What is not a duration (a
// clock's rate, counts, shares) stays as written.

// TTLFor is the TTL lock kind k plays a story of ttl at, and whether it
// differs: at least k's MinTTL, rounded up to whole seconds for a kind
// that counts in them.
func TTLFor(k *locks.Kind, ttl time.Duration) (time.Duration, bool) {
	if k == nil || ttl <= 0 {
		return ttl, false
	}
	want := max(ttl, k.MinTTL)
	if k.WholeSeconds && want%time.Second != 0 {
		want += time.Second - want%time.Second
	}
	return want, want != ttl
}

// Slowed returns the scenario as lock kind k plays it: sc itself when k
// takes its TTL, else a copy with every duration stretched by the factor
// that brings the TTL to TTLFor's, Scale and ScaleWhy saying so.
func (sc *Scenario) Slowed(k *locks.Kind) *Scenario {
	ttl, slowed := TTLFor(k, sc.Lock.TTL)
	if !slowed {
		return sc
	}
	f := float64(ttl) / float64(sc.Lock.TTL)
	c := *sc
	stretch(reflect.ValueOf(&c.Lock).Elem(), f)
	stretch(reflect.ValueOf(&c.Workload).Elem(), f)
	c.Steps = stretchSlice(sc.Steps, f)
	if sc.Sentinel != nil {
		s := *sc.Sentinel
		stretch(reflect.ValueOf(&s).Elem(), f)
		c.Sentinel = &s
	}
	c.Lock.TTL = ttl // exactly: the product may miss by a nanosecond
	c.Scale = f
	why := fmt.Sprintf("%s cannot be asked for a TTL of %v", k.Name, sc.Lock.TTL)
	switch {
	case k.MinTTL > sc.Lock.TTL:
		why += fmt.Sprintf(" (%v at the least)", k.MinTTL)
	case k.WholeSeconds:
		why += " (whole seconds only)"
	}
	c.ScaleWhy = fmt.Sprintf("played %.3g× slower, at a TTL of %v: %s", f, ttl, why)
	return &c
}

// stretchSlice copies steps with their durations stretched: the story's
// own steps are shared with every other play of it.
func stretchSlice(steps []Step, f float64) []Step {
	if steps == nil {
		return nil
	}
	out := make([]Step, len(steps))
	copy(out, steps)
	for i := range out {
		stretch(reflect.ValueOf(&out[i]).Elem(), f)
	}
	return out
}

var durationType = reflect.TypeFor[time.Duration]()

// stretch multiplies every time.Duration in v (a settable struct) by f,
// in its fields, embedded structs, slices of structs and pointers to
// structs, each copied before it is changed; maps and everything else are
// left as they are (none holds a duration).
func stretch(v reflect.Value, f float64) {
	switch {
	case v.Type() == durationType:
		d := float64(v.Int()) * f
		if math.Abs(d) >= float64(time.Millisecond) {
			d = math.Round(d/float64(time.Millisecond)) * float64(time.Millisecond)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				stretch(v.Field(i), f)
			}
		}
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct:
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem())
		stretch(c.Elem(), f)
		v.Set(c)
	case v.Kind() == reflect.Slice && !v.IsNil() && holdsDuration(v.Type().Elem()):
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			stretch(c.Index(i), f)
		}
		v.Set(c)
	}
}

// holdsDuration says whether a value of type t can hold a time.Duration
// that stretch reaches.
func holdsDuration(t reflect.Type) bool { return holds(t, map[reflect.Type]bool{}) }

func holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a type that holds itself: asked already
	}
	seen[t] = true
	switch {
	case t == durationType:
		return true
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && holds(t.Field(i).Type, seen) {
				return true
			}
		}
	case t.Kind() == reflect.Pointer, t.Kind() == reflect.Slice:
		return holds(t.Elem(), seen)
	}
	return false
}
