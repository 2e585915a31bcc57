// Package apptest runs imagectl's command tree in the verb packages' tests
// (cmd/imagectl/app/<verb>), as main does: Run gives the exit code, stdout
// and stderr of app.Run; RepoMatrix and RepoCatalog are the repository's
// committed matrix.yaml and catalog.json. It is test code: no production
// package imports it (arch_test.go checks). Package app's own tests cannot
// use it (it imports app) and keep their own run.
package apptest
