package app

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/internal/docsurl"
)

// renamedEnv are the old environment variables of docs/cli.md's "Renamed
// and removed flags", with the ones that replaced them.
var renamedEnv = map[string]string{
	"IMAGECTL_REGISTRY_OVERRIDE": "IMAGECTL_REPOSITORY",
	"IMAGECTL_PACKAGE_INDEX_URL": "IMAGECTL_PACKAGE_INDEX",
}

// warnRenamedEnv says on w, for each old variable set, that it is no longer
// read and what replaced it.
func warnRenamedEnv(w io.Writer) {
	for _, old := range slices.Sorted(maps.Keys(renamedEnv)) {
		if os.Getenv(old) != "" {
			fmt.Fprintf(w, options.WarnPrefix+"warning: %s is set, and no longer read: it is now %s (%s)\n", old, renamedEnv[old], docsurl.CLIRenamedFlags)
		}
	}
}

// environmentHelp lists the environment variables the flags of the tree
// fall back to, for the root command's help.
func environmentHelp(root *cobra.Command) string {
	uses := map[string]map[string]map[string]bool{} // env -> "--flag" -> verbs
	base.WalkCommands(root, func(c *cobra.Command) {
		verb := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		visit := func(f *pflag.Flag) {
			envs := f.Annotations[options.AnnotationEnv]
			if len(envs) == 0 {
				return
			}
			if uses[envs[0]] == nil {
				uses[envs[0]] = map[string]map[string]bool{}
			}
			flag := "--" + f.Name
			if uses[envs[0]][flag] == nil {
				uses[envs[0]][flag] = map[string]bool{}
			}
			if verb != "" {
				uses[envs[0]][flag][verb] = true
			}
		}
		c.Flags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
	})
	var b strings.Builder
	b.WriteString("Environment: each variable stands in for its flag when the flag is not given.\n")
	for _, env := range slices.Sorted(maps.Keys(uses)) {
		var flags []string
		for _, flag := range slices.Sorted(maps.Keys(uses[env])) {
			if verbs := slices.Sorted(maps.Keys(uses[env][flag])); len(verbs) > 0 {
				flag += " (" + strings.Join(verbs, ", ") + ")"
			}
			flags = append(flags, flag)
		}
		fmt.Fprintf(&b, "  %-30s %s\n", env, strings.Join(flags, "; "))
	}
	b.WriteString(`Read by the libraries, with no flag: COSIGN_PASSWORD (key password),
SOURCE_DATE_EPOCH (image timestamps), GITHUB_TOKEN (GitHub API),
DOCKER_CONFIG (registry credentials), IMAGECTL_CACHE_DIR (--cache-dir).`)
	return b.String()
}
