// Package docs checks the architecture document against the code: every
// interface the tree declares is in its table, and every file it names as
// the home of a concept exists.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

func architecture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Every exported interface of the tree has a row in the Interfaces table
// naming its package, and the table names no interface that is gone.
func TestArchitectureListsEveryInterface(t *testing.T) {
	doc := architecture(t)
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)`[^|]*\\| ([a-z0-9/]+) \\|")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		listed[m[2]+"."+m[1]] = true
	}
	declared := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				_, isInterface := ts.Type.(*ast.InterfaceType)
				// An exported alias (signers.Signer = PrivValidator) is
				// listed like an interface of its own package.
				_, isAlias := ts.Type.(*ast.SelectorExpr)
				isAlias = isAlias && ts.Assign.IsValid()
				if (isInterface || isAlias) && ts.Name.IsExported() && !strings.HasPrefix(pkg, "internal") {
					declared[filepath.ToSlash(pkg)+"."+ts.Name.Name] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range declared {
		if !listed[name] {
			t.Errorf("docs/architecture.md: interface %s is not in the Interfaces table", name)
		}
	}
	for name := range listed {
		if !declared[name] {
			t.Errorf("docs/architecture.md: the Interfaces table lists %s, which the code does not declare", name)
		}
	}
}

// Every file the document names (`dir/file.go`) exists.
func TestArchitectureNamesFilesThatExist(t *testing.T) {
	doc := architecture(t)
	file := regexp.MustCompile("`((?:cmd|scenarios|runner|nodes|docker|signers|network|results|latency|internal)/[A-Za-z0-9_/.-]+\\.(?:go|yaml|json))`")
	found := 0
	for _, m := range file.FindAllStringSubmatch(doc, -1) {
		found++
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/architecture.md names %s: %v", m[1], err)
		}
	}
	if found < 10 {
		t.Fatalf("docs/architecture.md names only %d files; the concept table is missing", found)
	}
}

// The backends that record events (nodes, the sim) import only the event
// contract of the results, not the analysis or any renderer: reports read
// events only, and a node does not carry a chart library. html/template
// reaches them only through CometBFT's own dependencies (grpc's
// x/net/trace; viper's spf13/cast in nodes) and net/rpc's debug page
// (the threshold MODEL's transport), never from valnet. The sim
// imports no real backend.
func TestBackendsImportOnlyTheEventContract(t *testing.T) {
	for _, pkg := range []string{"nodes", "sim"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			p, imports := fields[0], fields[1:]
			switch {
			case p == "github.com/valnet/valnet/results", strings.HasPrefix(p, "gonum.org/"),
				strings.HasPrefix(p, "github.com/valnet/valnet/") && strings.Contains(p, "report"),
				pkg == "sim" && (p == "github.com/valnet/valnet/nodes" || p == "github.com/valnet/valnet/docker"):
				t.Errorf("%s depends on %s", pkg, p)
			}
			if slices.Contains(imports, "html/template") && p != "golang.org/x/net/trace" && p != "github.com/spf13/cast" && p != "net/rpc" {
				t.Errorf("%s: %s imports html/template", pkg, p)
			}
		}
	}
}
