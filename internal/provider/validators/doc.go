// Package validators holds the attribute validators of the meshscope provider.
// Each is a small exported constructor; every validator skips null and unknown
// values, so it only ever judges what the practitioner actually wrote.
package validators
