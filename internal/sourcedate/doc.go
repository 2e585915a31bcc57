// Package sourcedate is the one place imagectl reads SOURCE_DATE_EPOCH
// (https://reproducible-builds.org/specs/source-date-epoch/), the time
// every timestamp in an image, an extension layout and an SBOM is set to.
//
// A value is a decimal Unix time in seconds from 0 to Max. Max is the
// latest time every consumer of the value represents exactly: a ustar tar
// header's 11 octal digits (2242-03-16T12:56:31Z), which is also before
// ext4's timestamp limit (2446), within RFC 3339's four-digit years (image
// configs, SBOMs) and, in milliseconds (extensions.json's
// installedTimestamp), far within int64. Without the bound,
// 99999999999999999 overflowed installedTimestamp and gave mtimes in 1901.
package sourcedate
