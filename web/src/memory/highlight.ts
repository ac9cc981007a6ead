// Past-session search: the snippet's words that the query names, marked for the page
// (plain text parts, never HTML, so a snippet cannot inject markup).

export interface Part {
  text: string
  hit: boolean
}

const escape = (word: string): string => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The snippet split into parts, those matching a word of the query (any case) marked. */
export function highlight(snippet: string, query: string): Part[] {
  const words = [...new Set(query.split(/\s+/u).filter((w) => w.length > 0))].sort((a, b) => b.length - a.length)
  if (words.length === 0) return [{ text: snippet, hit: false }]
  const pattern = new RegExp(`(${words.map(escape).join('|')})`, 'giu')
  // split with one capturing group alternates: text between matches, a match, text...
  return snippet
    .split(pattern)
    .map((text, i) => ({ text, hit: i % 2 === 1 }))
    .filter((part) => part.text !== '')
}

/** The kind of a memory's namespace (`user:<id>`, `workspace:<id>`, `team:<id>`). */
export function scopeOf(namespace: string): 'user' | 'workspace' | 'team' | 'other' {
  const kind = namespace.split(':', 1)[0]
  return kind === 'user' || kind === 'workspace' || kind === 'team' ? kind : 'other'
}
