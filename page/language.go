package page

import (
	"strings"

	"golang.org/x/text/language"
)

// Locale is one language of the pages: its tag, its writing direction and its messages.
type Locale struct {
	Tag language.Tag
	// Dir is the value of the dir attribute: "ltr" or "rtl".
	Dir string
	// Messages are the texts of the pages in this language.
	Messages Messages
}

// maxAcceptLanguage bounds the part of an Accept-Language header that is parsed: real browsers send well
// under 200 bytes, and the header comes from anyone on the internet.
const maxAcceptLanguage = 512

var (
	localeTags = func() []language.Tag {
		tags := make([]language.Tag, len(locales))
		for i, l := range locales {
			tags[i] = l.Tag
		}
		return tags
	}()
	// The first tag of the list, English, is what the matcher falls back to.
	matcher = language.NewMatcher(localeTags)
)

// Language returns the language of the pages that best fits an Accept-Language header value; English when
// the header is empty, malformed or names no language the pages speak. It never blocks.
func Language(acceptLanguage string) language.Tag {
	return LocaleFor(acceptLanguage).Tag
}

// LocaleFor returns the locale that best fits an Accept-Language header value, English by default.
func LocaleFor(acceptLanguage string) Locale {
	if len(acceptLanguage) > maxAcceptLanguage {
		// Cut at a list separator, so the last kept entry is whole.
		acceptLanguage = acceptLanguage[:maxAcceptLanguage]
		if i := strings.LastIndexByte(acceptLanguage, ','); i >= 0 {
			acceptLanguage = acceptLanguage[:i]
		}
	}
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(tags) == 0 {
		return locales[0]
	}
	_, i, conf := matcher.Match(tags...)
	if conf == language.No {
		return locales[0]
	}
	return locales[i]
}

// Locales returns every language the pages speak, English first. The slice is a copy.
func Locales() []Locale {
	return append([]Locale(nil), locales...)
}
