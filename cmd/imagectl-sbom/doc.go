// Command imagectl-sbom is imagectl's SBOM scanner: the one part of
// imagectl that links syft (github.com/anchore/syft), in a module of its
// own so that neither the imagectl binary nor the main module's builds,
// vets and tests carry syft's 260 modules.
//
//	imagectl-sbom scan      read a request (JSON, sbom.Request) on standard
//	                        input, scan the image it names, write the result
//	                        (JSON, sbom.Result) on standard output
//	imagectl-sbom version   print the scanner's version (syft's version and
//	                        a digest of the scan's configuration)
//
// imagectl runs it through sbom.Command, which serves the platform image
// to it on a loopback registry for the time of the scan: the scanner
// reads images over plain HTTP from loopback addresses only, and needs no
// credentials. A scan process starts preparing (syft's license matcher)
// before its request arrives, so that imagectl can start it while BuildKit
// solves; one whose standard input ends empty exits 0 without scanning.
// It exits 1 with a message on standard error when the scan fails, and 2
// on a usage error.
//
// make build builds it into bin/ beside imagectl (sbom.Find looks there
// first). The scan itself is package scan.
package main
