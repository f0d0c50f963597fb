package pages

import (
	"html/template"
	"math/rand/v2"
	"strings"
	"testing"
)

// shapeTemplate is how shapes were written before shapesHTML: html/template
// with its contextual escaping. It stays here as the second judge that
// shapesHTML writes the same bytes.
const shapeTemplate = `{{define "shape"}}{{if eq .Kind "rect"}}<rect class="{{.Class}} z" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" data-a="{{.A}}" data-b="{{.B}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{else if eq .Kind "mark"}}<g class="{{.Class}} z" transform="translate({{f .X}},0)" data-a="{{.A}}">{{with .Title}}<title>{{.}}</title>{{end}}<line x1="0" x2="0" y1="{{f .Y}}" y2="{{f .Y2}}"/>{{if .Label}}<text x="{{f .LX}}" y="{{f .LY}}">{{.Label}}</text>{{end}}</g>
{{else if eq .Kind "text"}}<text class="{{.Class}} z" x="{{f .X}}" y="{{f .Y}}" data-a="{{.A}}" data-dx="{{f .DX}}">{{.Label}}</text>
{{else if eq .Kind "circle"}}<circle class="{{.Class}} z" cx="{{f .X}}" cy="{{f .Y}}" r="{{f .W}}" data-a="{{.A}}">{{with .Title}}<title>{{.}}</title>{{end}}</circle>
{{end}}{{end}}<svg><g>{{range .}}{{template "shape" .}}{{end}}</g></svg>`

// shapesHTML writes what the template wrote, byte for byte, for shapes of
// every kind with text that needs escaping (quotes, markup, ampersands,
// plus signs, NUL, non-ASCII) and numbers of every sign and size.
func TestShapesHTMLMatchesTheTemplate(t *testing.T) {
	tmpl := template.Must(template.New("shapes").Funcs(pageFuncs).Parse(shapeTemplate))
	texts := []string{"", "acquire c1", `say "hi"`, "it's <b>bold</b> & more", "a+b", "nul\x00here", "é → ✂", "</title><script>x</script>"}
	kinds := []string{"rect", "mark", "text", "circle", "unknown"}
	rng := rand.New(rand.NewPCG(1, 2))
	num := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Float64() * 1e3
		default:
			return rng.Float64() * 1e5
		}
	}
	pick := func() string { return texts[rng.IntN(len(texts))] }
	for i := range 2000 {
		shapes := make([]shape, rng.IntN(4))
		for j := range shapes {
			shapes[j] = shape{
				Kind: kinds[rng.IntN(len(kinds))], Class: pick(),
				A: rng.Int64N(1e12) - 1e6, B: rng.Int64N(1e12),
				X: num(), Y: num(), W: num(), H: num(), DX: num(), LX: num(), LY: num(),
				Label: pick(), Title: pick(),
			}
		}
		var want strings.Builder
		if err := tmpl.Execute(&want, shapes); err != nil {
			t.Fatal(err)
		}
		got := "<svg><g>" + string(shapesHTML(shapes)) + "</g></svg>"
		if got != want.String() {
			t.Fatalf("case %d: shapes %+v\n got: %q\nwant: %q", i, shapes, got, want.String())
		}
	}
}
