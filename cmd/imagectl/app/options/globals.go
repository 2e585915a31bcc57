package options

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/matrix"
)

// Globals are the flags every command shares (--matrix, --catalog,
// --verbose) and where the command writes. Every verb's New takes them.
type Globals struct {
	// Streams are stdout, stderr and --verbose, with the logger and the
	// warnings writer over stderr (base.Streams: all that a verb reading
	// no files, such as smoke attach, takes).
	base.Streams
	MatrixPath  string // "": the built-in matrix.yaml (see resolveFiles)
	CatalogPath string // "": the built-in catalog.json
	filesOnce   sync.Once
	noticeOnce  sync.Once
	// builtinCatalogRead is set once the built-in catalog is read.
	builtinCatalogRead bool
}

var _ Options = (*Globals)(nil)

// NewGlobals returns the globals of a command writing to stdout and stderr.
func NewGlobals(stdout, stderr io.Writer) *Globals {
	return &Globals{Streams: base.Streams{Stdout: stdout, Stderr: stderr}}
}

// AddFlags registers the global flags; the root command passes its
// persistent flags.
func (g *Globals) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&g.MatrixPath, "matrix", "", "path to matrix.yaml (default: ./matrix.yaml, else the one built into imagectl)")
	fl.StringVar(&g.CatalogPath, "catalog", "", "path to the catalog snapshot (default: catalog.json beside the matrix file; the one built into imagectl only with the built-in matrix)")
	g.Streams.AddFlags(fl)
	BindEnv(fl, "matrix", "IMAGECTL_MATRIX")
	BindEnv(fl, "catalog", "IMAGECTL_CATALOG")
}

// Validate accepts any value: the files are read when a verb needs them.
func (g *Globals) Validate() error { return nil }

// AnnotationReadsFiles marks a command that reads matrix.yaml and the
// catalog (see ReadsFiles).
const AnnotationReadsFiles = "imagectl/reads-files"

// fileFlags are the global flags only the verbs marked by ReadsFiles take.
var fileFlags = []string{"matrix", "catalog"}

// ReadsFiles marks cmd as a verb (or a group of verbs) that reads
// matrix.yaml and the catalog: --matrix and --catalog apply to it and to the
// commands below it. Every other verb refuses the two flags (exit 2) rather
// than ignore them, and its help does not list them (HideFileFlags).
func ReadsFiles(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[AnnotationReadsFiles] = "true"
}

// readsFiles reports whether cmd or a command above it is marked by
// ReadsFiles.
func readsFiles(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[AnnotationReadsFiles] != "" {
			return true
		}
	}
	return false
}

// readers names the commands marked by ReadsFiles, for messages.
func readers(root *cobra.Command) string {
	var names []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[AnnotationReadsFiles] != "" {
			names = append(names, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
			return
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	slices.Sort(names)
	return OrList(names)
}

// checkFileFlags refuses --matrix and --catalog on a verb that does not
// read the files. Their environment variables are no flag given: a shell
// that exports IMAGECTL_MATRIX runs every verb.
func checkFileFlags(cmd *cobra.Command) error {
	if readsFiles(cmd) {
		return nil
	}
	for _, n := range fileFlags {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			return Usagef("--%s: %s reads no matrix.yaml or catalog (only %s do): drop --%s", n, cmd.CommandPath(), readers(cmd.Root()), n)
		}
	}
	return nil
}

// HideFileFlags keeps --matrix and --catalog out of the help of every
// command under root that does not read the files (see ReadsFiles).
func HideFileFlags(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if readsFiles(c) {
			return
		}
		help := c.HelpFunc()
		c.SetHelpFunc(func(c *cobra.Command, args []string) {
			if readsFiles(c) {
				// A subcommand that reads them, under a group that does
				// not: it inherits this help function.
				help(c, args)
				return
			}
			var flags []*pflag.Flag
			for _, n := range fileFlags {
				if f := c.Root().PersistentFlags().Lookup(n); f != nil && !f.Hidden {
					f.Hidden = true
					flags = append(flags, f)
				}
			}
			defer func() {
				for _, f := range flags {
					f.Hidden = false
				}
			}()
			help(c, args)
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	for _, c := range root.Commands() {
		walk(c)
	}
}

// LoadMatrixAndCatalog reads matrix.yaml and the catalog named by the
// globals.
func (g *Globals) LoadMatrixAndCatalog() (*matrix.Config, *catalog.Catalog, error) {
	cfg, err := g.LoadMatrix()
	if err != nil {
		return nil, nil, err
	}
	cat, err := g.LoadCatalog()
	if err != nil {
		return nil, nil, err
	}
	return cfg, cat, nil
}

// Names of the embedded defaults in messages.
const (
	builtinMatrix  = "matrix.yaml (built into imagectl)"
	builtinCatalog = "catalog.json (built into imagectl)"
)

// resolveFiles decides, once, where matrix.yaml and the catalog come from:
// --matrix/IMAGECTL_MATRIX, else ./matrix.yaml when it exists, else the
// copy built into the binary (said once on stderr when read); --catalog/
// IMAGECTL_CATALOG, else catalog.json beside the matrix file, else (with the
// built-in matrix) the built-in catalog.
func (g *Globals) resolveFiles() {
	g.filesOnce.Do(func() {
		if g.MatrixPath == "" {
			// Only a ./matrix.yaml that is not there at all gives the
			// built-in one: one that is there but does not read (a
			// dangling link, a directory without search permission) is
			// read, so its error names it.
			if _, err := os.Lstat("matrix.yaml"); !errors.Is(err, fs.ErrNotExist) {
				g.MatrixPath = "matrix.yaml"
			}
		}
		if g.CatalogPath == "" && g.MatrixPath != "" {
			g.CatalogPath = filepath.Join(filepath.Dir(g.MatrixPath), "catalog.json")
		}
	})
}

// builtinNotice says, once, that the built-in files are used, and names
// --catalog catalog.json when the built-in catalog is read beside a
// ./catalog.json.
func (g *Globals) builtinNotice() {
	g.noticeOnce.Do(func() {
		what := "matrix.yaml and catalog.json"
		if g.CatalogPath != "" {
			what = "matrix.yaml"
		}
		also := ""
		if g.CatalogPath == "" && localCatalog() {
			also = "; ./catalog.json is not read with the built-in matrix: " + catalogHint
		}
		fmt.Fprintf(g.Stderr, "imagectl: no ./matrix.yaml: using the %s built into imagectl %s (--matrix FILE or IMAGECTL_MATRIX for another)%s\n", what, CurrentVersion().Version, also)
	})
}

// catalogHint is how to read a ./catalog.json with the built-in matrix.
const catalogHint = "pass --catalog catalog.json to use it"

// localCatalog reports whether there is a ./catalog.json.
func localCatalog() bool {
	_, err := os.Lstat("catalog.json")
	return err == nil
}

// CatalogHint is, after a verb failed, a reminder that it read the built-in
// catalog although a ./catalog.json is there (one matrix refresh --catalog
// catalog.json may just have written), so that an error saying "run
// imagectl matrix refresh" is not followed blindly; "" otherwise.
func (g *Globals) CatalogHint() string {
	if !g.builtinCatalogRead || !localCatalog() {
		return ""
	}
	return "the catalog read was the one built into imagectl, not ./catalog.json: " + catalogHint
}

// MatrixName is the matrix file's path, or the built-in one's name.
func (g *Globals) MatrixName() string {
	g.resolveFiles()
	if g.MatrixPath == "" {
		return builtinMatrix
	}
	return g.MatrixPath
}

// CatalogName is the catalog's path, or the built-in one's name.
func (g *Globals) CatalogName() string {
	g.resolveFiles()
	if g.CatalogPath == "" {
		return builtinCatalog
	}
	return g.CatalogPath
}

// CatalogFile is the catalog's path for a verb that rewrites it; the
// built-in catalog cannot be.
func (g *Globals) CatalogFile() (string, error) {
	g.resolveFiles()
	if g.CatalogPath == "" {
		flag := "--catalog FILE"
		if localCatalog() {
			flag = "--catalog catalog.json (the one here)"
		}
		return "", Usagef("no ./matrix.yaml, so the catalog is the one built into imagectl, which cannot be rewritten: pass %s (or run in a checkout)", flag)
	}
	return g.CatalogPath, nil
}

// LoadMatrix reads matrix.yaml (see resolveFiles).
func (g *Globals) LoadMatrix() (*matrix.Config, error) {
	g.resolveFiles()
	if g.MatrixPath == "" {
		g.builtinNotice()
		return matrix.Parse(builtinMatrix, imagectl.Matrix)
	}
	return matrix.Load(g.MatrixPath)
}

// LoadCatalog reads the catalog (see resolveFiles).
func (g *Globals) LoadCatalog() (*catalog.Catalog, error) {
	g.resolveFiles()
	if g.CatalogPath == "" {
		g.builtinNotice()
		g.builtinCatalogRead = true
		return catalog.Parse(builtinCatalog, imagectl.Catalog)
	}
	return catalog.Load(g.CatalogPath)
}
