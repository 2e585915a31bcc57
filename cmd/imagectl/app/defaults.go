package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/imagectl/imagectl"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
)

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
func (g *globals) resolveFiles() {
	g.filesOnce.Do(func() {
		if g.matrixPath == "" {
			// Only a ./matrix.yaml that is not there at all gives the
			// built-in one: one that is there but does not read (a
			// dangling link, a directory without search permission) is
			// read, so its error names it.
			if _, err := os.Lstat("matrix.yaml"); !errors.Is(err, fs.ErrNotExist) {
				g.matrixPath = "matrix.yaml"
			}
		}
		if g.catalogPath == "" && g.matrixPath != "" {
			g.catalogPath = filepath.Join(filepath.Dir(g.matrixPath), "catalog.json")
		}
	})
}

// builtinNotice says, once, that the built-in files are used.
func (g *globals) builtinNotice() {
	g.noticeOnce.Do(func() {
		what := "matrix.yaml and catalog.json"
		if g.catalogPath != "" {
			what = "matrix.yaml"
		}
		fmt.Fprintf(g.stderr, "imagectl: no ./matrix.yaml: using the %s built into imagectl %s (--matrix FILE or IMAGECTL_MATRIX for another)\n", what, currentVersion().Version)
	})
}

// matrixName is the matrix file's path, or the built-in one's name.
func (g *globals) matrixName() string {
	g.resolveFiles()
	if g.matrixPath == "" {
		return builtinMatrix
	}
	return g.matrixPath
}

// catalogName is the catalog's path, or the built-in one's name.
func (g *globals) catalogName() string {
	g.resolveFiles()
	if g.catalogPath == "" {
		return builtinCatalog
	}
	return g.catalogPath
}

// catalogFile is the catalog's path for a verb that rewrites it; the
// built-in catalog cannot be.
func (g *globals) catalogFile() (string, error) {
	g.resolveFiles()
	if g.catalogPath == "" {
		return "", usagef("no ./matrix.yaml, so the catalog is the one built into imagectl, which cannot be rewritten: pass --catalog FILE (or run in a checkout)")
	}
	return g.catalogPath, nil
}

// loadMatrix reads matrix.yaml (see resolveFiles).
func (g *globals) loadMatrix() (*matrix.Config, error) {
	g.resolveFiles()
	if g.matrixPath == "" {
		g.builtinNotice()
		return matrix.Parse(builtinMatrix, imagectl.Matrix)
	}
	return matrix.Load(g.matrixPath)
}

// loadCatalog reads the catalog (see resolveFiles).
func (g *globals) loadCatalog() (*catalog.Catalog, error) {
	g.resolveFiles()
	if g.catalogPath == "" {
		g.builtinNotice()
		return catalog.Parse(builtinCatalog, imagectl.Catalog)
	}
	return catalog.Load(g.catalogPath)
}
