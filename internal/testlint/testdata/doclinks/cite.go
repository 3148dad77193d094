// Package cite cites the documents beside it.
package cite

// docs/A.md#first-section, docs/A.md#first-section-1 and
// (docs/A.md#code-and-a-link-punctuation) resolve; A.md#title too.
// docs/A.md#second does not.
// docs/Missing.md does not exist.
// https://example.com/x/README.md is a URL, not a reference.
