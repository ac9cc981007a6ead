// Past-session search: the snippet's matched words marked for the page, as plain text
// parts (never HTML, so a snippet cannot inject markup).

export interface Part {
  text: string
  hit: boolean
}

const escape = (word: string): string => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Alternating parts of `text` split by a pattern with one capturing group: matches marked. */
function parts(text: string, pattern: RegExp): Part[] {
  return text
    .split(pattern)
    .map((piece, i) => ({ text: piece, hit: i % 2 === 1 }))
    .filter((part) => part.text !== '')
}

/** The snippet in parts: the server marks its matches `**word**` (Postgres ts_headline);
 * a snippet without marks gets the query's words marked (any case, longest first). */
export function highlight(snippet: string, query: string): Part[] {
  if (/\*\*[^*]+\*\*/u.test(snippet)) return parts(snippet, /\*\*([^*]+)\*\*/u)
  const words = [...new Set(query.split(/\s+/u).filter((w) => w.length > 0))].sort((a, b) => b.length - a.length)
  if (words.length === 0) return [{ text: snippet, hit: false }]
  return parts(snippet, new RegExp(`(${words.map(escape).join('|')})`, 'giu'))
}

/** The kind of a memory's namespace (`user:<id>`, `workspace:<id>`, `team:<id>`). */
export function scopeOf(namespace: string): 'user' | 'workspace' | 'team' | 'other' {
  const kind = namespace.split(':', 1)[0]
  return kind === 'user' || kind === 'workspace' || kind === 'team' ? kind : 'other'
}
