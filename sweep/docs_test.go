package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// docCommand is one valnet sweep command of docs/sweep.md, and the
// message printed after it when the doc shows one ("$ " examples).
type docCommand struct {
	args []string
	want string
}

// docsWithSweeps are the docs whose valnet sweep commands are checked.
var docsWithSweeps = []string{"../docs/sweep.md", "../docs/capacity.md", "../docs/devices.md", "../docs/load.md", "../docs/sim.md"}

// docCommands reads every valnet sweep command in the code blocks of
// docsWithSweeps, joining continued lines.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	var out []docCommand
	for _, f := range docsWithSweeps {
		out = append(out, docFileCommands(t, f)...)
	}
	return out
}

func docFileCommands(t *testing.T, file string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		shown := strings.HasPrefix(line, "$ ")
		line = strings.TrimPrefix(line, "$ ")
		if !strings.HasPrefix(line, "valnet sweep ") {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		c := docCommand{args: shellWords(t, line)[2:]}
		if shown && i+1 < len(lines) {
			c.want = strings.TrimSuffix(strings.TrimPrefix(lines[i+1], "valnet: "), ", ...)")
		}
		out = append(out, c)
	}
	return out
}

// shellWords splits a command line as sh would for these examples:
// spaces, and single quotes.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
			}
			in = false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unclosed quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestDocExamples checks every sweep command of docsWithSweeps: the
// runnable ones prepare without a problem (every point resolved), the
// ones shown with their message fail with exactly that message.
func TestDocExamples(t *testing.T) {
	cmds := docCommands(t)
	if len(cmds) < 5 {
		t.Fatalf("found %d commands in %v", len(cmds), docsWithSweeps)
	}
	for _, c := range cmds {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			err := prepareArgs(c.args)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("the example fails: %v", err)
			case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

// prepareArgs does what valnet sweep does with its arguments, short of
// running.
func prepareArgs(args []string) error {
	cfg := Config{Source: args[0], Repeat: 1}
	if _, err := os.Stat(filepath.Join("..", cfg.Source)); err == nil {
		cfg.Source = filepath.Join("..", cfg.Source) // a path from the repository's root
	}
	var errs []error
	for i := 1; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--set":
			path, values, err := scenarios.ParseSetFlag(args[i+1])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cfg.Axes = append(cfg.Axes, Axis{Path: path, Values: values})
		case "--metric":
			cfg.Metrics = append(cfg.Metrics, args[i+1])
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	_, err := Prepare(cfg)
	return err
}
