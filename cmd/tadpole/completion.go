package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

var completionCmd = &command{
	name: "completion", args: "bash|zsh|fish", short: "print a shell completion script",
	long: "Completes verbs, flags and the names of the server's models. Load it\n" +
		"with, for example:\n" +
		"  source <(tadpole completion bash)      # in ~/.bashrc\n" +
		"  source <(tadpole completion zsh)       # in ~/.zshrc, after compinit\n" +
		"  tadpole completion fish > ~/.config/fish/completions/tadpole.fish",
	minArgs: 1, maxArgs: 1,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		return func(_ context.Context, args []string) error {
			switch args[0] {
			case "bash":
				writeBash(os.Stdout)
			case "zsh":
				writeZsh(os.Stdout)
			case "fish":
				writeFish(os.Stdout)
			default:
				return fmt.Errorf("no completion for %q: bash, zsh or fish", args[0])
			}
			return nil
		}
	},
}

// Shell snippets the scripts share: the server's model names, and the
// serve flags (serve parses its own flags, so ask it).
const (
	listModels = `tadpole list 2>/dev/null | awk 'NR>1 {print $1}'`
	serveFlags = `tadpole serve --help 2>&1 | grep -oE -- '--[a-z0-9-]+' | sort -u`
)

// flagInfo is one flag of a verb, for completion.
type flagInfo struct {
	long, short, usage string
	takesValue         bool
}

func verbFlags(c *command) []flagInfo {
	fs, _ := c.flags()
	var out []flagInfo
	fs.VisitAll(func(f *pflag.Flag) {
		out = append(out, flagInfo{long: f.Name, short: f.Shorthand, usage: f.Usage, takesValue: f.Value.Type() != "bool"})
	})
	out = append(out, flagInfo{long: "help", short: "h", usage: "help for " + c.name})
	return out
}

// verbNames are every verb and alias, serve included.
func verbNames() []string {
	names := []string{"serve"}
	for _, c := range commands {
		names = append(names, c.name)
		names = append(names, c.aliases...)
	}
	return names
}

// verbsCompleting are the verbs (and aliases) whose arguments are kind.
func verbsCompleting(kind string) []string {
	var names []string
	for _, c := range commands {
		if c.complete == kind {
			names = append(names, c.name)
			names = append(names, c.aliases...)
		}
	}
	sort.Strings(names)
	return names
}

func flagWords(c *command) string {
	var words []string
	for _, f := range verbFlags(c) {
		words = append(words, "--"+f.long)
		if f.short != "" {
			words = append(words, "-"+f.short)
		}
	}
	return strings.Join(words, " ")
}

func writeBash(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for tadpole (tadpole completion bash)
_tadpole() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "%s" -- "$cur"))
        return
    fi
    local verb="${COMP_WORDS[1]}"
    if [[ "$cur" == -* ]]; then
        local flags=""
        case "$verb" in
            serve) flags="$(%s)" ;;
`, strings.Join(verbNames(), " "), serveFlags)
	for _, c := range commands {
		fmt.Fprintf(w, "            %s) flags=%q ;;\n", strings.Join(append([]string{c.name}, c.aliases...), "|"), flagWords(c))
	}
	fmt.Fprintf(w, `        esac
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    case "$verb" in
        %s)
            local IFS=$'\n'
            COMPREPLY=($(compgen -W "$(%s)" -- "$cur")) ;;
        completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
        help) COMPREPLY=($(compgen -W "%s" -- "$cur")) ;;
    esac
}
complete -o default -F _tadpole tadpole
`, strings.Join(verbsCompleting("model"), "|"), listModels, strings.Join(verbNames(), " "))
}

func writeZsh(w io.Writer) {
	fmt.Fprint(w, "#compdef tadpole\n# zsh completion for tadpole (tadpole completion zsh)\n_tadpole() {\n    local -a verbs flags models\n    verbs=(\n")
	fmt.Fprintf(w, "        %q\n", "serve:start the server")
	for _, c := range commands {
		for _, n := range append([]string{c.name}, c.aliases...) {
			fmt.Fprintf(w, "        %q\n", n+":"+c.short)
		}
	}
	fmt.Fprintf(w, `    )
    if (( CURRENT == 2 )); then
        _describe 'verb' verbs
        return
    fi
    local verb=${words[2]}
    if [[ ${words[CURRENT]} == -* ]]; then
        case $verb in
            serve) flags=(${(f)"$(%s)"}) ;;
`, serveFlags)
	for _, c := range commands {
		fmt.Fprintf(w, "            %s) flags=(%s) ;;\n", strings.Join(append([]string{c.name}, c.aliases...), "|"), flagWords(c))
	}
	fmt.Fprintf(w, `        esac
        compadd -- $flags
        return
    fi
    case $verb in
        %s)
            models=(${(f)"$(%s)"})
            compadd -- $models ;;
        completion) compadd bash zsh fish ;;
        help) compadd %s ;;
        *) _files ;;
    esac
}
if [ "$funcstack[1]" = "_tadpole" ]; then
    _tadpole "$@"
else
    compdef _tadpole tadpole
fi
`, strings.Join(verbsCompleting("model"), "|"), listModels, strings.Join(verbNames(), " "))
}

func writeFish(w io.Writer) {
	fmt.Fprint(w, "# fish completion for tadpole (tadpole completion fish)\ncomplete -c tadpole -f\n")
	fmt.Fprintf(w, "complete -c tadpole -n __fish_use_subcommand -a serve -d %s\n", fishQuote("start the server"))
	for _, c := range commands {
		for _, n := range append([]string{c.name}, c.aliases...) {
			fmt.Fprintf(w, "complete -c tadpole -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(c.short))
		}
	}
	fmt.Fprintf(w, "complete -c tadpole -n '__fish_seen_subcommand_from serve' -a '(%s)'\n", strings.ReplaceAll(serveFlags, "'", `\'`))
	for _, c := range commands {
		cond := fishQuote("__fish_seen_subcommand_from " + strings.Join(append([]string{c.name}, c.aliases...), " "))
		for _, f := range verbFlags(c) {
			line := fmt.Sprintf("complete -c tadpole -n %s -l %s", cond, f.long)
			if f.short != "" {
				line += " -s " + f.short
			}
			if f.takesValue {
				line += " -r"
				if f.long == "file" {
					line += " -F"
				}
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishQuote(f.usage))
		}
	}
	fmt.Fprintf(w, "complete -c tadpole -n %s -a %s\n",
		fishQuote("__fish_seen_subcommand_from "+strings.Join(verbsCompleting("model"), " ")), fishQuote("("+listModels+")"))
	fmt.Fprintf(w, "complete -c tadpole -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	fmt.Fprintf(w, "complete -c tadpole -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(strings.Join(verbNames(), " ")))
}

// fishQuote quotes s for fish: single quotes, with \ and ' escaped.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
