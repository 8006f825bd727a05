package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var showCmd = &command{
	name: "show", args: "MODEL", short: "show a model's details, Modelfile, parameters or template",
	long: "Without a flag, prints the model's architecture, size, context length,\n" +
		"quantization, capabilities, parameters, system prompt and license.",
	minArgs: 1, maxArgs: 1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		modelfile := fs.Bool("modelfile", false, "print the model's Modelfile")
		parameters := fs.Bool("parameters", false, "print the model's parameters")
		template := fs.Bool("template", false, "print the model's chat template")
		system := fs.Bool("system", false, "print the model's system prompt")
		license := fs.Bool("license", false, "print the model's license")
		verbose := fs.BoolP("verbose", "v", false, "with no other flag: every metadata key of the model")
		return func(ctx context.Context, args []string) error {
			part := ""
			for name, on := range map[string]bool{"modelfile": *modelfile, "parameters": *parameters,
				"template": *template, "system": *system, "license": *license} {
				if !on {
					continue
				}
				if part != "" {
					return fmt.Errorf("only one of --modelfile, --parameters, --template, --system and --license can be given")
				}
				part = name
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			resp, err := c.Show(ctx, &ollamaapi.ShowRequest{Model: args[0], Verbose: *verbose && part == ""})
			if err != nil {
				return err
			}
			if part == "" {
				writeShowInfo(os.Stdout, resp, *verbose)
				return nil
			}
			fmt.Print(withNewline(showPart(resp, part)))
			return nil
		}
	},
}

// showPart is one text part of a show answer: modelfile, parameters,
// template, system or license.
func showPart(r *ollamaapi.ShowResponse, part string) string {
	switch part {
	case "modelfile":
		return r.Modelfile
	case "parameters":
		return r.Parameters
	case "template":
		return r.Template
	case "system":
		return r.System
	case "license":
		return r.License
	}
	return ""
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// writeShowInfo prints a model's summary in sections, as `ollama show`
// does: Model, Capabilities, Parameters, System, License (first lines),
// and with verbose every metadata key.
func writeShowInfo(w io.Writer, r *ollamaapi.ShowResponse, verbose bool) {
	section := func(title string, rows [][2]string) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(w, "  %s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 4, ' ', 0)
		for _, r := range rows {
			if r[1] == "" {
				fmt.Fprintf(tw, "    %s\n", r[0]) // no padding after a lone cell
				continue
			}
			fmt.Fprintf(tw, "    %s\t%s\n", r[0], r[1])
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	arch := r.Details.Family
	if a, ok := r.ModelInfo["general.architecture"].(string); ok && a != "" {
		arch = a
	}
	var model [][2]string
	add := func(k string, v any) {
		if s := fmt.Sprint(v); v != nil && s != "" && s != "0" {
			model = append(model, [2]string{k, s})
		}
	}
	add("architecture", arch)
	params := r.Details.ParameterSize
	if n, ok := r.ModelInfo["general.parameter_count"].(float64); ok && params == "" {
		params = fmt.Sprintf("%.0f", n)
	}
	add("parameters", params)
	add("context length", number(r.ModelInfo[arch+".context_length"]))
	add("embedding length", number(r.ModelInfo[arch+".embedding_length"]))
	add("quantization", r.Details.QuantizationLevel)
	section("Model", model)

	var caps [][2]string
	for _, c := range r.Capabilities {
		caps = append(caps, [2]string{c, ""})
	}
	section("Capabilities", caps)

	var ps [][2]string
	for _, line := range strings.Split(strings.TrimSpace(r.Parameters), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			ps = append(ps, [2]string{k, strings.TrimSpace(v)})
		}
	}
	section("Parameters", ps)
	section("System", firstLines(r.System, 2))
	section("License", firstLines(r.License, 2))

	if verbose && len(r.ModelInfo) > 0 {
		keys := make([]string, 0, len(r.ModelInfo))
		for k := range r.ModelInfo {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var rows [][2]string
		for _, k := range keys {
			rows = append(rows, [2]string{k, metadataValue(r.ModelInfo[k])})
		}
		section("Metadata", rows)
	}
}

// metadataValue is a metadata value for a table: a long list (the
// vocabulary) is cut to its first items and its length.
func metadataValue(v any) string {
	list, ok := v.([]any)
	if !ok {
		return fmt.Sprint(number(v))
	}
	const show = 6
	if len(list) <= show {
		return fmt.Sprint(list)
	}
	parts := make([]string, show)
	for i := range parts {
		parts[i] = fmt.Sprint(number(list[i]))
	}
	return fmt.Sprintf("[%s ...] (%d values)", strings.Join(parts, " "), len(list))
}

// number prints a JSON number without an exponent.
func number(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// firstLines is up to n non-empty lines of s, as table rows, with "..."
// when there is more.
func firstLines(s string, n int) [][2]string {
	var rows [][2]string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if len(rows) == n {
			rows = append(rows, [2]string{"...", ""})
			break
		}
		rows = append(rows, [2]string{line, ""})
	}
	return rows
}
