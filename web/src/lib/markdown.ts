// Markdown to safe HTML: markdown-it (raw HTML off) then DOMPurify; links open in a new tab.
import DOMPurify from 'dompurify'
import MarkdownIt from 'markdown-it'

const md = new MarkdownIt({ html: false, linkify: true, breaks: true })

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

export function renderMarkdown(source: string): string {
  return DOMPurify.sanitize(md.render(source))
}

export function domain(url: string): string {
  try {
    return new URL(url).hostname
  } catch {
    return url
  }
}
