package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

const replHelp = `Available commands:
  /set            Set session variables (/set alone lists them)
  /show           Show model information (/show alone lists what)
  /clear          Clear the session context
  /bye            Exit
  /?, /help       Help for a command

Use """ to begin and end a message of several lines.
Name an image file (./cat.png, '/my pics/cat.jpg') in a message to attach it.
Ctrl-C stops an answer; Ctrl-D or /bye leaves.
`

const setHelp = `Available /set commands:
  /set parameter NAME VALUE   Set a model parameter (e.g. temperature 0.2, num_ctx 4096, stop "###")
  /set system TEXT            Set the system message
  /set format json            Ask for answers in JSON
  /set noformat               Ask for free text again
  /set verbose                Show timings after each answer
  /set quiet                  Don't show timings
  /set wordwrap               Wrap words at the terminal's width
  /set nowordwrap             Don't wrap words
`

const showHelp = `Available /show commands:
  /show info         Details of the model
  /show modelfile    The model's Modelfile
  /show parameters   The parameters set in this session and the model's
  /show system       The system message
  /show template     The chat template
  /show license      The model's license
`

// repl chats on a terminal until /bye or end of input. Ctrl-C stops the
// answer being written, or, at the prompt, drops the line being typed.
func (s *session) repl(ctx context.Context, in io.Reader) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	// SIGTERM still ends the program, after the current answer is cut.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()

	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- sc.Err()
		close(lines)
	}()

	fmt.Fprintln(s.out, `Send a message (/? for help, /bye to leave)`)
	var multi strings.Builder
	inMulti := false
	for {
		if inMulti {
			fmt.Fprint(s.out, "... ")
		} else {
			fmt.Fprint(s.out, ">>> ")
		}
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(s.out)
				return <-readErr
			}
			line = l
		case <-sigs:
			multi.Reset()
			inMulti = false
			fmt.Fprint(s.out, "\nUse Ctrl + d or /bye to exit.\n")
			continue
		case <-ctx.Done():
			return ctx.Err()
		}

		prompt, ok := "", false
		trimmed := strings.TrimSpace(line)
		switch {
		case inMulti:
			if before, found := strings.CutSuffix(strings.TrimRight(line, " \t"), `"""`); found {
				multi.WriteString(before)
				prompt, ok, inMulti = multi.String(), true, false
				multi.Reset()
			} else {
				multi.WriteString(line + "\n")
			}
		case strings.HasPrefix(trimmed, `"""`):
			rest := strings.TrimPrefix(trimmed, `"""`)
			if before, found := strings.CutSuffix(rest, `"""`); found {
				prompt, ok = before, true
			} else {
				inMulti = true
				if rest != "" {
					multi.WriteString(rest + "\n")
				}
			}
		case strings.HasPrefix(trimmed, "/") && startsWithMediaPath(trimmed):
			prompt, ok = line, true // "/home/me/cat.png what is it?"
		case strings.HasPrefix(trimmed, "/"):
			quit, err := s.command(ctx, trimmed)
			if err != nil {
				fmt.Fprintf(s.out, "Error: %v\n", err)
			}
			if quit {
				return nil
			}
		case trimmed != "":
			prompt, ok = line, true
		}
		if !ok || strings.TrimSpace(prompt) == "" {
			continue
		}
		text, images, err := s.attach(ctx, prompt)
		if err == nil {
			err = s.askInterruptibly(ctx, sigs, text, images)
		}
		if err != nil {
			var ce *client.ConnectError
			if errors.As(err, &ce) || ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(s.out, "Error: %v\n", err)
		}
		fmt.Fprintln(s.out)
	}
}

// askInterruptibly asks while a Ctrl-C cancels the answer (not the
// session).
func (s *session) askInterruptibly(ctx context.Context, sigs <-chan os.Signal, prompt string, images []string) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
	}()
	err := s.ask(actx, prompt, images)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		return nil // cut by Ctrl-C: the exchange is dropped
	}
	return err
}

// command runs one /command; quit is true for /bye.
func (s *session) command(ctx context.Context, line string) (quit bool, err error) {
	f := strings.Fields(line)
	switch f[0] {
	case "/bye", "/exit":
		return true, nil
	case "/?", "/help":
		switch {
		case len(f) > 1 && f[1] == "set":
			fmt.Fprint(s.out, setHelp)
		case len(f) > 1 && f[1] == "show":
			fmt.Fprint(s.out, showHelp)
		default:
			fmt.Fprint(s.out, replHelp)
		}
	case "/clear":
		s.messages = nil
		fmt.Fprintln(s.out, "Cleared session context")
	case "/set":
		return false, s.set(line, f[1:])
	case "/show":
		return false, s.show(ctx, f[1:])
	default:
		fmt.Fprintf(s.out, "Unknown command '%s'. Type /? for help\n", f[0])
	}
	return false, nil
}

func (s *session) set(line string, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(s.out, setHelp)
		return nil
	}
	switch args[0] {
	case "parameter":
		if len(args) < 3 {
			return errors.New("usage: /set parameter NAME VALUE")
		}
		if err := setParameter(s.opts, args[1], args[2:]); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "Set parameter '%s' to '%s'\n", args[1], strings.Join(args[2:], ", "))
	case "system":
		_, text, _ := strings.Cut(line, "system")
		s.system = unquote(strings.TrimSpace(text))
		fmt.Fprintln(s.out, "Set system message.")
	case "format":
		if len(args) < 2 {
			return errors.New("usage: /set format json")
		}
		s.format = formatJSON(strings.Join(args[1:], " "))
		s.wrap = false
		fmt.Fprintf(s.out, "Set format to '%s' mode.\n", strings.Join(args[1:], " "))
	case "noformat":
		s.format = nil
		fmt.Fprintln(s.out, "Disabled format.")
	case "verbose":
		s.verbose = true
		fmt.Fprintln(s.out, "Set 'verbose' mode.")
	case "quiet":
		s.verbose = false
		fmt.Fprintln(s.out, "Set 'quiet' mode.")
	case "wordwrap":
		s.wrap = isTerminal(s.out)
		fmt.Fprintln(s.out, "Set 'wordwrap' mode.")
	case "nowordwrap":
		s.wrap = false
		fmt.Fprintln(s.out, "Set 'nowordwrap' mode.")
	default:
		return fmt.Errorf("unknown /set %s; /set alone lists them", args[0])
	}
	return nil
}

func (s *session) show(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(s.out, showHelp)
		return nil
	}
	resp, err := s.c.Show(ctx, &ollamaapi.ShowRequest{Model: s.model})
	if err != nil {
		return err
	}
	switch args[0] {
	case "info":
		writeShowInfo(s.out, resp, false)
	case "modelfile", "template", "license":
		text := showPart(resp, args[0])
		if text == "" {
			text = "No " + args[0] + " was specified for this model."
		}
		fmt.Fprint(s.out, withNewline(text))
	case "system":
		text := s.system
		if text == "" {
			text = resp.System
		}
		if text == "" {
			text = "No system message was specified for this model."
		}
		fmt.Fprint(s.out, withNewline(text))
	case "parameters":
		if len(s.opts) > 0 {
			fmt.Fprintln(s.out, "User defined parameters:")
			names := make([]string, 0, len(s.opts))
			for k := range s.opts {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				fmt.Fprintf(s.out, "%-30s %v\n", k, s.opts[k])
			}
			fmt.Fprintln(s.out)
		}
		if resp.Parameters != "" {
			fmt.Fprintln(s.out, "Model defined parameters:")
			fmt.Fprint(s.out, withNewline(resp.Parameters))
		} else if len(s.opts) == 0 {
			fmt.Fprintln(s.out, "No parameters were specified for this model.")
		}
	default:
		return fmt.Errorf("unknown /show %s; /show alone lists them", args[0])
	}
	return nil
}

// startsWithMediaPath reports whether a line that starts with "/" starts
// with a file to attach rather than a command.
func startsWithMediaPath(line string) bool {
	refs := findMediaPaths(line)
	return len(refs) > 0 && refs[0].start == 0
}
