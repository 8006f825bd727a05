package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var runCmd = &command{
	name: "run", args: "MODEL [PROMPT...]", short: "chat with a model",
	long: "With a PROMPT, or with text piped to standard input (put before the\n" +
		"PROMPT), prints the model's answer and exits. Otherwise starts a chat:\n" +
		"type a message and press Enter; wrap a message of several lines in\n" +
		"\"\"\" … \"\"\"; Ctrl-C stops the answer being written; /? lists the\n" +
		"commands (/set parameter, /show, /clear, /bye). A model the server\n" +
		"lacks is pulled first.\n\n" +
		"Examples:\n" +
		"  tadpole run llama3.2\n" +
		"  tadpole run llama3.2 \"Why is the sky blue?\" --verbose\n" +
		"  tadpole run llama3.2 -p temperature=0 -p num_predict=100 \"Count to ten\"\n" +
		"  cat notes.txt | tadpole run llama3.2 \"Summarize this.\"\n" +
		"  tadpole run llava \"What is in this picture? ./cat.png\"\n\n" +
		"A path in the prompt (typed, not piped) that starts with ./ ../ / or ~/\n" +
		"and ends in .jpg, .jpeg, .png or .webp attaches that image, for models\n" +
		"with the \"vision\" capability (quote a path with spaces, or escape\n" +
		"them with \\; write a path in backticks to send it as text).",
	minArgs: 1, maxArgs: -1, ownSignals: true, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		verbose := fs.Bool("verbose", false, "print timings and token rates after each answer")
		format := fs.String("format", "", `answer format: "json" (or a JSON schema)`)
		keepAlive := fs.String("keepalive", "", "how long the model stays loaded after the request: 5m, 1h, 0 (unload at once), -1 (forever)")
		noWrap := fs.Bool("nowordwrap", false, "don't wrap words at the terminal's width")
		params := fs.StringArrayP("parameter", "p", nil, "set a model parameter, NAME=VALUE (repeatable), as /set parameter does")
		insecure := fs.Bool("insecure", false, "use plain HTTP if the model must be pulled")
		think := fs.String("think", "", `thinking models: "true", "false", or a level ("high", "medium", "low"); default the model's`)
		hideThinking := fs.Bool("hidethinking", false, "don't print a thinking model's thinking")
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			s := &session{c: c, model: args[0], opts: map[string]any{}, verbose: *verbose, out: os.Stdout, hideThinking: *hideThinking}
			switch *think {
			case "":
			case "true", "false":
				s.think = json.RawMessage(*think)
			case "high", "medium", "low":
				s.think = json.RawMessage(strconv.Quote(*think))
			default:
				return fmt.Errorf("--think %q: want true, false, high, medium or low", *think)
			}
			if *format != "" {
				s.format = formatJSON(*format)
			}
			if *keepAlive != "" {
				var d ollamaapi.Duration
				if err := d.UnmarshalJSON([]byte(strconv.Quote(*keepAlive))); err != nil {
					return fmt.Errorf("--keepalive: %w", err)
				}
				s.keepAlive = &d
			}
			for _, p := range *params {
				name, value, ok := strings.Cut(p, "=")
				if !ok {
					return fmt.Errorf("--parameter %q: want NAME=VALUE", p)
				}
				if err := setParameter(s.opts, name, []string{value}); err != nil {
					return fmt.Errorf("--parameter: %w", err)
				}
			}
			typed := strings.Join(args[1:], " ")
			interactive := typed == ""
			piped := ""
			if !isTerminal(os.Stdin) {
				in, err := io.ReadAll(os.Stdin)
				if err != nil {
					return fmt.Errorf("read standard input: %w", err)
				}
				piped = strings.TrimRight(string(in), "\n")
				interactive = false
			}
			s.wrap = !*noWrap && isTerminal(os.Stdout) && s.format == nil
			if interactive {
				if err := s.load(ctx, *insecure); err != nil {
					return err
				}
				return s.repl(ctx, os.Stdin)
			}
			if strings.TrimSpace(piped+typed) == "" {
				return errors.New("nothing to ask: the prompt and standard input are empty")
			}
			return s.oneShot(ctx, piped, typed, *insecure)
		}
	},
}

// formatJSON is the format field for a --format or /set format value.
func formatJSON(f string) json.RawMessage {
	if strings.HasPrefix(strings.TrimSpace(f), "{") {
		return json.RawMessage(f)
	}
	return json.RawMessage(strconv.Quote(f))
}

// session is one conversation with a model.
type session struct {
	c         *client.Client
	model     string
	opts      map[string]any
	system    string
	messages  []ollamaapi.Message
	format    json.RawMessage
	keepAlive *ollamaapi.Duration
	verbose   bool
	wrap      bool
	out       *os.File
	// think is the request's think (nil: the model's default);
	// hideThinking keeps thinking off the screen.
	think        json.RawMessage
	hideThinking bool
	// caps are the model's /api/show capabilities, asked when a prompt
	// first names a file to attach.
	caps []string
}

// load loads the model (a chat request without messages), pulling it
// first when the server lacks it, with a spinner on a terminal.
func (s *session) load(ctx context.Context, insecure bool) error {
	req := &ollamaapi.ChatRequest{Model: s.model, Stream: new(false), KeepAlive: s.keepAlive, Options: s.opts}
	stop := spinner(os.Stderr, "loading "+s.model)
	err := s.c.Chat(ctx, req, func(ollamaapi.ChatResponse) error { return nil })
	stop()
	if client.IsNotFound(err) {
		if err := pull(ctx, s.c, s.model, insecure); err != nil {
			return err
		}
		stop := spinner(os.Stderr, "loading "+s.model)
		defer stop()
		err = s.c.Chat(ctx, req, func(ollamaapi.ChatResponse) error { return nil })
	}
	return err
}

// oneShot answers one prompt, the piped text then the typed prompt, and
// returns; Ctrl-C stops it (status 130). Like `ollama run MODEL PROMPT`
// it sends the prompt to /api/generate, so the model's own template
// applies as it does to a completion: a model without a chat template
// continues the bare prompt. Files the typed prompt names are attached
// (images.go); a model the server lacks is pulled first.
func (s *session) oneShot(ctx context.Context, piped, typed string, insecure bool) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// attach asks /api/show when the prompt names files: a 404 there, or
	// from /api/generate, pulls the model (once).
	pulled := false
	text, images, err := s.attach(ctx, typed)
	if client.IsNotFound(err) && ctx.Err() == nil {
		pulled = true
		if err = s.load(ctx, insecure); err == nil {
			text, images, err = s.attach(ctx, typed)
		}
	}
	prompt := text
	if piped != "" {
		prompt = strings.TrimSpace(piped + " " + text)
	}
	if err == nil {
		err = s.generate(ctx, prompt, images)
		if client.IsNotFound(err) && !pulled && ctx.Err() == nil {
			if err = s.load(ctx, insecure); err == nil {
				err = s.generate(ctx, prompt, images)
			}
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr)
		os.Exit(130)
	}
	return err
}

// generate prints the streamed answer to one prompt as Ollama's one-shot
// run does: the answer, then an empty line; with --verbose, the timings
// of a finished answer on standard error.
func (s *session) generate(ctx context.Context, prompt string, images []string) error {
	req := &ollamaapi.GenerateRequest{Model: s.model, Prompt: prompt, Images: images, Format: s.format, KeepAlive: s.keepAlive, Options: s.opts, Think: s.think}
	p := s.newPrinter()
	defer p.stopSpin()
	var last ollamaapi.GenerateResponse
	err := s.c.Generate(ctx, req, func(r ollamaapi.GenerateResponse) error {
		p.add(r.Thinking, r.Response)
		last = r
		return nil
	})
	p.finish()
	if err != nil {
		p.endLine()
		return explainTooLarge(err, images)
	}
	fmt.Fprint(s.out, "\n\n")
	if s.verbose && last.Done {
		writeMetrics(os.Stderr, last.Metrics)
	}
	return nil
}

// ask sends the conversation and a new user message (with its images,
// base64) to /api/chat, and prints the streamed answer. The exchange
// joins the conversation only when the answer is complete; the images
// stay on their message.
func (s *session) ask(ctx context.Context, prompt string, images []string) error {
	msgs := make([]ollamaapi.Message, 0, len(s.messages)+2)
	if s.system != "" {
		msgs = append(msgs, ollamaapi.Message{Role: "system", Content: s.system})
	}
	msgs = append(msgs, s.messages...)
	msgs = append(msgs, ollamaapi.Message{Role: "user", Content: prompt, Images: images})
	req := &ollamaapi.ChatRequest{Model: s.model, Messages: msgs, Format: s.format, KeepAlive: s.keepAlive, Options: s.opts, Think: s.think}

	p := s.newPrinter()
	defer p.stopSpin()
	var last ollamaapi.ChatResponse
	err := s.c.Chat(ctx, req, func(r ollamaapi.ChatResponse) error {
		p.add(r.Message.Thinking, r.Message.Content)
		last = r
		return nil
	})
	p.finish()
	p.endLine()
	if err != nil {
		return explainTooLarge(err, images)
	}
	s.messages = append(s.messages, ollamaapi.Message{Role: "user", Content: prompt, Images: images},
		ollamaapi.Message{Role: "assistant", Content: p.answer.String()})
	if s.verbose {
		writeMetrics(os.Stderr, last.Metrics)
	}
	return nil
}

// printer writes a streamed answer as Ollama's CLI does: a thinking
// model's thinking first, between "Thinking..." and "...done thinking.",
// then the answer, wrapped at the terminal's width when asked; a spinner
// turns until the first piece arrives.
type printer struct {
	out          *os.File
	w            textWriter
	hideThinking bool
	stopSpin     func()
	thinking     bool // inside the thinking block
	answer       strings.Builder
}

func (s *session) newPrinter() *printer {
	p := &printer{out: s.out, w: plainWriter{s.out}, hideThinking: s.hideThinking}
	if s.wrap {
		p.w = &wordWrapper{w: s.out, width: termWidth(s.out) - 1}
	}
	p.stopSpin = spinner(os.Stderr, "")
	return p
}

// add prints one streamed piece.
func (p *printer) add(thinking, content string) {
	if thinking != "" && !p.hideThinking {
		p.stopSpin()
		if !p.thinking {
			p.w.WriteString("Thinking...\n")
			p.thinking = true
		}
		p.w.WriteString(thinking)
	}
	if content != "" {
		p.stopSpin()
		if p.thinking {
			p.w.WriteString("\n...done thinking.\n\n")
			p.thinking = false
		}
		p.answer.WriteString(content)
		p.w.WriteString(content)
	}
}

// finish closes a thinking block the answer left open and flushes.
func (p *printer) finish() {
	p.stopSpin()
	if p.thinking {
		p.w.WriteString("\n...done thinking.\n")
		p.thinking = false
	}
	p.w.Flush()
}

// endLine ends the answer's last line.
func (p *printer) endLine() {
	if p.answer.Len() > 0 && !strings.HasSuffix(p.answer.String(), "\n") {
		fmt.Fprintln(p.out)
	}
}

// writeMetrics prints an answer's timings as `ollama run --verbose` does
// (ollamaapi.Metrics.Summary in Ollama): each line only when its value is set.
func writeMetrics(w io.Writer, m ollamaapi.Metrics) {
	if m.TotalDuration > 0 {
		fmt.Fprintf(w, "total duration:       %v\n", m.TotalDuration)
	}
	if m.LoadDuration > 0 {
		fmt.Fprintf(w, "load duration:        %v\n", m.LoadDuration)
	}
	if m.PromptEvalCount > 0 {
		fmt.Fprintf(w, "prompt eval count:    %d token(s)\n", m.PromptEvalCount)
	}
	if m.PromptEvalDuration > 0 {
		fmt.Fprintf(w, "prompt eval duration: %v\n", m.PromptEvalDuration)
		fmt.Fprintf(w, "prompt eval rate:     %s\n", rate(m.PromptEvalCount, m.PromptEvalDuration))
	}
	if m.EvalCount > 0 {
		fmt.Fprintf(w, "eval count:           %d token(s)\n", m.EvalCount)
	}
	if m.EvalDuration > 0 {
		fmt.Fprintf(w, "eval duration:        %v\n", m.EvalDuration)
		fmt.Fprintf(w, "eval rate:            %s\n", rate(m.EvalCount, m.EvalDuration))
	}
}

// setParameter sets a model option from its text form, as /set parameter
// and --parameter give it, typed and range-checked by the one option table
// (models.ParseOption, as a Modelfile's PARAMETER); "stop" adds stop
// strings to a list.
func setParameter(opts map[string]any, name string, values []string) error {
	if _, ok := models.LookupOption(name); !ok {
		return fmt.Errorf("unknown parameter %q", name)
	}
	if len(values) == 0 {
		return fmt.Errorf("parameter %q needs a value", name)
	}
	if name == "stop" {
		list, _ := opts["stop"].([]string)
		for _, v := range values {
			list = append(list, unquote(v))
		}
		opts["stop"] = list
		return nil
	}
	v, err := models.ParseOption(name, unquote(strings.Join(values, " ")))
	if err != nil {
		return err
	}
	opts[name] = v
	return nil
}

func unquote(v string) string {
	if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		return u
	}
	return v
}
