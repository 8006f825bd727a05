package infer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"text/template"
)

// nestedDefines is the template bomb of issue 40: n levels of {{define}},
// each calling the one below ten times, over the prompt.
func nestedDefines(n int) string {
	var b strings.Builder
	b.WriteString(`{{define "l0"}}{{.Prompt}}{{end}}`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{{define "l%d"}}%s{{end}}`, i, strings.Repeat(fmt.Sprintf(`{{template "l%d" .}}`, i-1), 10))
	}
	fmt.Fprintf(&b, `{{template "l%d" .}}`, n)
	return b.String()
}

func TestGoTemplateBudgetStopsBombs(t *testing.T) {
	data := map[string]any{"Prompt": strings.Repeat("p", 1000), "System": "s", "Messages": []goMessage{{Role: "user", Content: "hi"}}}
	cases := []struct{ name, src, want string }{
		{"nested defines", nestedDefines(7), "output over"},
		{"range over a huge int", `{{range 1000000000}}{{end}}`, "more than 100000 steps"},
		{"range in range", `{{range 100000}}{{range 100000}}{{end}}{{end}}`, "steps"},
		{"recursion", `{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}`, "nested deeper than 100"},
		{"printf doubling", `{{$x := .Prompt}}{{range 40}}{{$x = printf "%s%s" $x $x}}{{end}}{{len $x}}`, "functions built more than"},
		{"printf width", `{{printf "%1000000000d" 1}}`, "width or precision over"},
		{"printf star", `{{printf "%*d" 1000000000 1}}`, "argument ('*')"},
		{"printf precision", `{{printf "%.999999999f" 1.0}}`, "width or precision over"},
		{"html growth", `{{$x := .Prompt}}{{range 40}}{{$x = html $x $x}}{{end}}`, "functions built more than"},
		{"reserved name", `{{__tadpole_leave}}`, "reserved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := renderGoTemplate(&out, c.src, data, goTemplateBudget)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if c.want != "reserved" && !errors.Is(err, errGoTemplateLimit) && !strings.Contains(err.Error(), errGoTemplateLimit.Error()) {
				t.Fatalf("err = %v does not name the limit", err)
			}
			if KindOf(err) != BadRequest {
				t.Fatalf("err = %#v, want a BadRequest", err)
			}
			if out.Len() > goTemplateBudget.maxOutput {
				t.Fatalf("wrote %d bytes past the budget", out.Len())
			}
		})
	}
}

// Templates within the budget render exactly as text/template renders
// them: the inserted steps print nothing.
func TestGoTemplateBudgetRendersAsTextTemplate(t *testing.T) {
	data := goTemplateData(&Request{System: "be brief"}, []Message{
		{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi <there>"}, {Role: "assistant", Content: "hello"}, {Role: "user", Content: "again"},
	})
	srcs := map[string]string{
		"chatml": `{{- range $i, $m := .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`,
		"prompt and system":             `{{ if .System }}<<SYS>>{{ .System }}<</SYS>>{{ end }}[INST] {{ .Prompt }} [/INST]`,
		"with else, defines, functions": `{{define "m"}}[{{.Role}}:{{printf "%-8s|%.3s" .Role .Content}}]{{end}}{{with .Tools}}tools{{else}}none{{end}}{{range .Messages}}{{template "m" .}}{{if eq .Role "user"}}{{html .Content}}{{else if eq .Role "assistant"}}{{js .Content}}{{else}}{{urlquery .Content}}{{end}}{{end}}{{json .System}}{{print 1 "a"}}{{println "b"}}{{range $i := 3}}{{$i}}{{if eq $i 1}}{{continue}}{{end}}{{if eq $i 2}}{{break}}{{end}}{{end}}`,
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			want := new(bytes.Buffer)
			if err := template.Must(template.New("x").Option("missingkey=zero").Funcs(goTemplateFuncs).Parse(src)).Execute(want, data); err != nil {
				t.Fatal(err)
			}
			got, err := execTemplate(src, data)
			if err != nil {
				t.Fatal(err)
			}
			if got != want.String() {
				t.Fatalf("got %q, want %q", got, want.String())
			}
		})
	}
}
