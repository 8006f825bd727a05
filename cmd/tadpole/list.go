package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var listCmd = &command{
	name: "list", aliases: []string{"ls"}, short: "list the models on the server",
	long: "Shows every model the server has: its name, the first 12 digits of its\n" +
		"digest, its size on disk and when it was last changed.",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, _ []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			resp, err := c.List(ctx)
			if err != nil {
				return err
			}
			return writeList(os.Stdout, resp.Models, time.Now())
		}
	},
}

var psCmd = &command{
	name: "ps", short: "list the models loaded in memory",
	long: "PROCESSOR says where the model runs (\"100% CPU\", \"100% GPU\",\n" +
		"\"48%/52% CPU/GPU\"); UNTIL says when an idle model is unloaded.",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(ctx context.Context, _ []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			resp, err := c.Ps(ctx)
			if err != nil {
				return err
			}
			return writePs(os.Stdout, resp.Models, time.Now())
		}
	},
}

// table lays out columns in Ollama's style: left aligned, four spaces
// between columns. Cells are separated by tabs, each row ends with one.
type table struct {
	b  strings.Builder
	tw *tabwriter.Writer
}

func newTable(header string) *table {
	t := &table{}
	t.tw = tabwriter.NewWriter(&t.b, 0, 0, 4, ' ', 0)
	fmt.Fprintln(t.tw, header)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t")+"\t")
}

// writeTo writes the table without the padding the last column leaves at
// the end of each line.
func (t *table) writeTo(w io.Writer) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(t.b.String(), "\n") {
		if line != "" {
			out.WriteString(strings.TrimRight(line, " \n") + "\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

func writeList(w io.Writer, models []ollamaapi.ListModel, now time.Time) error {
	t := newTable("NAME\tID\tSIZE\tMODIFIED\t")
	for _, m := range models {
		name := m.Name
		if name == "" {
			name = m.Model
		}
		t.row(name, shortDigest(m.Digest), humanBytes(m.Size), humanTime(m.ModifiedAt, now, "Never"))
	}
	return t.writeTo(w)
}

func writePs(w io.Writer, models []ollamaapi.ProcessModel, now time.Time) error {
	t := newTable("NAME\tID\tSIZE\tPROCESSOR\tCONTEXT\tUNTIL\t")
	for _, m := range models {
		name := m.Name
		if name == "" {
			name = m.Model
		}
		until := humanTime(m.ExpiresAt, now, "Never")
		if !m.ExpiresAt.IsZero() && m.ExpiresAt.Before(now) {
			until = "Stopping..."
		}
		t.row(name, shortDigest(m.Digest), humanBytes(m.Size), processor(m), strconv.Itoa(m.ContextLength), until)
	}
	return t.writeTo(w)
}

// processor is where a loaded model runs: Tadpole's own answer when the
// server gives one, else the share of its size in GPU memory, as Ollama
// computes it.
func processor(m ollamaapi.ProcessModel) string {
	if m.Tadpole != nil && m.Tadpole.Processor != "" {
		return m.Tadpole.Processor
	}
	switch {
	case m.SizeVRAM <= 0 || m.Size <= 0:
		return "100% CPU"
	case m.SizeVRAM >= m.Size:
		return "100% GPU"
	}
	gpu := int(float64(m.SizeVRAM) * 100 / float64(m.Size))
	return fmt.Sprintf("%d%%/%d%% CPU/GPU", 100-gpu, gpu)
}
