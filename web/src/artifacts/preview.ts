// Artifacts: their bytes and thumbnails fetched with the bearer token (never in a URL),
// and a preview's tagged union (on `format`) turned into what the dialog shows.
import { apiUrl, authedFetch } from '@/api/client'
import { errorOf } from '@/api/errors'
import type { Schemas } from '@/api/types'
import { renderMarkdown } from '@/lib/markdown'
import { saveObjectUrl } from '@/lib/save'

export type ArtifactOut = Schemas['ArtifactOut']
export type ArtifactPreview = Schemas['MarkdownPreview'] | Schemas['PdfPreview'] | Schemas['PptPreview']
export type PptPage = Schemas['PptPage']
export type ArtifactVersionOut = Schemas['ArtifactVersionOut']

export type PreviewView =
  | { kind: 'markdown'; html: string }
  | { kind: 'pdf'; pages: string[] }
  | { kind: 'ppt'; slides: PptPage[] }

/** What the dialog shows for a preview: safe HTML, pages of text, or slides in order. */
export function previewView(preview: ArtifactPreview): PreviewView {
  switch (preview.format) {
    case 'markdown':
      return { kind: 'markdown', html: renderMarkdown(preview.text) }
    case 'pdf':
      return { kind: 'pdf', pages: preview.pages }
    case 'ppt':
      return { kind: 'ppt', slides: [...preview.pages].sort((a, b) => a.index - b.index) }
    default: {
      const never: never = preview
      throw new Error(`unknown preview ${JSON.stringify(never)}`)
    }
  }
}

/** The slide after `delta` steps from `current`, held within `count` slides. */
export function step(current: number, delta: number, count: number): number {
  if (count <= 0) return 0
  return Math.min(count - 1, Math.max(0, current + delta))
}

/** GETs an API path with the token; the answer, or its error thrown. */
async function authedGet(path: string): Promise<Response> {
  const answer = await authedFetch(new Request(apiUrl(path)))
  if (!answer.ok) throw await errorOf(answer)
  return answer
}

export async function fetchPreview(path: string): Promise<ArtifactPreview> {
  return (await previewAt(path)).preview
}

/** A path asking for one version (a version never changes, so its URL may be cached). */
export function atVersion(path: string, version: number): string {
  const url = new URL(path, 'http://x')
  url.searchParams.set('version', String(version))
  return `${url.pathname}${url.search}`
}

/** A preview, and why a deck has no slide images when the server says it has none
 * (its `X-Preview-Thumbnails: unavailable; reason="..."` header), else null. */
export async function previewAt(path: string): Promise<{ preview: ArtifactPreview; noThumbnails: string | null }> {
  const answer = await authedGet(path)
  const header = answer.headers.get('X-Preview-Thumbnails')
  const reason = header === null ? null : (/reason="([^"]*)"/.exec(header)?.[1] ?? header)
  return { preview: (await answer.json()) as ArtifactPreview, noThumbnails: reason }
}

/** An object URL of the bytes at an API path (the caller revokes it). */
export async function blobUrl(path: string): Promise<string> {
  return URL.createObjectURL(await (await authedGet(path)).blob())
}

/** Downloads an artifact's bytes and saves them under its name. */
export function download(artifact: ArtifactOut): Promise<void> {
  return saveAs(artifact.download_url, artifact.name)
}

/** Fetches the bytes at an API path (token in a header) and saves them as `name`. */
export async function saveAs(path: string, name: string): Promise<void> {
  saveObjectUrl(await blobUrl(path), name)
}

/** A readable size: bytes, KB or MB. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}
