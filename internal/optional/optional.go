// Package optional holds what optional values share: a partial update
// (a domain's Patch, a request's optional fields) leaves a nil field as it
// is.
package optional

// Set sets *dst to *v, unless v is nil.
func Set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
