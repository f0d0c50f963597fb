package verdict

import (
	"strings"
	"testing"
	"time"

	"splitbrain/checker/paired"
	"splitbrain/checker/search"
)

// fixed is a checker that returns p, or panics with boom.
func fixed(p Property, boom string) Checker {
	return Func(func(search.Config, *paired.History) Property {
		if boom != "" {
			panic(boom)
		}
		return p
	})
}

func prop(name string, v Verdict) Property {
	return Property{Name: name, Verdict: v, Reason: name + " is " + string(v), Decides: true}
}

func TestCompose(t *testing.T) {
	for _, tt := range []struct {
		name     string
		checkers []Checker
		want     Verdict
		reason   string // the composed reason
		props    int
	}{
		{"nothing to check is valid", nil, Valid, "", 0},
		{"all valid", []Checker{fixed(prop("a", Valid), ""), fixed(prop("b", Valid), "")}, Valid, "a is valid; b is valid", 2},
		{"unknown beats valid", []Checker{fixed(prop("a", Valid), ""), fixed(prop("b", Unknown), "")}, Unknown, "b is unknown", 2},
		{"invalid beats unknown", []Checker{fixed(prop("a", Unknown), ""), fixed(prop("b", Invalid), ""), fixed(prop("c", Valid), "")},
			Invalid, "b is invalid", 3},
		{"invalid beats unknown in any order", []Checker{fixed(prop("b", Invalid), ""), fixed(prop("a", Unknown), "")}, Invalid, "b is invalid", 2},
		{"a verdict it does not know is unknown", []Checker{fixed(prop("a", Verdict("maybe")), ""), fixed(prop("b", Valid), "")},
			Unknown, "a is maybe", 2},
		{"a panic is unknown, never a crash", []Checker{fixed(prop("a", Valid), ""), fixed(Property{}, "boom")},
			Unknown, "the checker failed: boom", 2},
		{"a panic does not hide an invalid", []Checker{fixed(Property{}, "boom"), fixed(prop("b", Invalid), "")}, Invalid, "b is invalid", 2},
		{"a property that does not decide explains only",
			[]Checker{fixed(prop("a", Valid), ""), fixed(Property{Name: "b", Verdict: Invalid, Reason: "b broke"}, "")}, Valid, "a is valid", 2},
		{"nothing to check leaves no property", []Checker{fixed(Property{}, ""), fixed(prop("a", Valid), "")}, Valid, "a is valid", 1},
		{"a reason is told once", []Checker{fixed(Property{Name: "a", Verdict: Unknown, Reason: "same", Decides: true}, ""),
			fixed(Property{Name: "b", Verdict: Unknown, Reason: "same", Decides: true}, "")}, Unknown, "same", 2},
		{"fencing makes a yielding property explain", []Checker{
			fixed(Property{Name: "cs", Verdict: Invalid, Reason: "overlap", Decides: true, YieldsToFencing: true}, ""),
			fixed(Property{Name: "fencing", Verdict: Valid, Reason: "fenced", Decides: true, Fenced: true}, "")}, Valid, "fenced", 2},
		{"without fencing it decides", []Checker{
			fixed(Property{Name: "cs", Verdict: Invalid, Reason: "overlap", Decides: true, YieldsToFencing: true}, ""),
			fixed(Property{Name: "fencing", Verdict: Valid, Reason: "unfenced"}, "")}, Invalid, "overlap", 2},
		{"a property within another invalid one is left out of the reason", []Checker{
			fixed(prop("p1", Invalid), ""), fixed(Property{Name: "p2", Verdict: Invalid, Reason: "p2 overlap", Decides: true, Within: "p1"}, "")},
			Invalid, "p1 is invalid", 2},
		{"alone it tells its reason", []Checker{
			fixed(prop("p1", Valid), ""), fixed(Property{Name: "p2", Verdict: Invalid, Reason: "p2 overlap", Decides: true, Within: "p1"}, "")},
			Invalid, "p2 overlap", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Compose(search.Config{}, &paired.History{}, tt.checkers...)
			if c.Verdict != tt.want || c.Reason != tt.reason || len(c.Properties) != tt.props {
				t.Errorf("got %s (%q) with %d properties, want %s (%q) with %d", c.Verdict, c.Reason, len(c.Properties), tt.want, tt.reason, tt.props)
			}
		})
	}
}

func TestComposePanicIsNoted(t *testing.T) {
	c := Compose(search.Config{}, &paired.History{}, fixed(Property{}, "boom"))
	if len(c.Properties) != 1 || c.Properties[0].Verdict != Unknown || !c.Properties[0].Decides {
		t.Fatalf("properties %+v, want one deciding unknown", c.Properties)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "panic: ") || !strings.Contains(c.Notes[0], "goroutine") {
		t.Errorf("notes %q, want the panic's stack", c.Notes)
	}
}

func TestComposeWindow(t *testing.T) {
	window := func(timeout time.Duration) func() *search.Window {
		return func() *search.Window { return &search.Window{Timeout: timeout} }
	}
	none := func() *search.Window { return nil }
	for _, tt := range []struct {
		name  string
		props []Property
		want  string
	}{
		{"the first invalid property with a window", []Property{
			{Name: "a", Verdict: Invalid, Decides: true}, {Name: "b", Verdict: Invalid, Decides: true, Window: window(2)},
			{Name: "c", Verdict: Invalid, Decides: true, Window: window(3)}}, "b"},
		{"a window that draws nothing is passed over", []Property{
			{Name: "a", Verdict: Invalid, Decides: true, Window: none}, {Name: "b", Verdict: Invalid, Decides: true, Window: window(2)}}, "b"},
		{"last ones only when no other has one", []Property{
			{Name: "p2", Verdict: Invalid, Decides: true, Window: window(1), WindowLast: true},
			{Name: "counter", Verdict: Invalid, Decides: true, Window: window(2)}}, "counter"},
		{"a last one when no other has one", []Property{
			{Name: "p2", Verdict: Invalid, Decides: true, Window: window(1), WindowLast: true},
			{Name: "counter", Verdict: Valid, Decides: true, Window: window(2)}}, "p2"},
		{"nothing when valid", []Property{{Name: "a", Verdict: Valid, Decides: true, Window: window(1)}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var checkers []Checker
			for _, p := range tt.props {
				checkers = append(checkers, fixed(p, ""))
			}
			name, w := Compose(search.Config{}, &paired.History{}, checkers...).Window()
			if name != tt.want || (w != nil) != (tt.want != "") {
				t.Errorf("window of %q (%v), want %q", name, w, tt.want)
			}
		})
	}
}

func TestWorse(t *testing.T) {
	for _, tt := range []struct{ a, b, want Verdict }{
		{Valid, Valid, Valid}, {Valid, Unknown, Unknown}, {Unknown, Valid, Unknown}, {Unknown, Invalid, Invalid},
		{Invalid, Valid, Invalid}, {"", Valid, Valid}, {"", Unknown, Unknown}, {Valid, "", Valid}, {"", "", ""},
	} {
		if got := Worse(tt.a, tt.b); got != tt.want {
			t.Errorf("Worse(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}
