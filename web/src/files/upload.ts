// Workspace files and chat attachments: the upload as multipart over XMLHttpRequest (fetch reports no upload
// progress), with the bearer token in a header and the API's error body on a failure.
import { apiUrl, refreshOnce } from '@/api/client'
import { errorFrom } from '@/api/errors'
import { readTokens } from '@/api/tokens'
import type { Schemas } from '@/api/types'

export type WorkspaceFileOut = Schemas['WorkspaceFileOut']
export type AttachmentOut = Schemas['AttachmentOut']

/** The fraction of the bytes sent, 0 to 1. */
export type OnProgress = (fraction: number) => void

/** The answer's JSON, or null when it has none. */
function bodyOf(xhr: XMLHttpRequest): unknown {
  try {
    return JSON.parse(xhr.responseText) as unknown
  } catch {
    return null
  }
}

function send(url: string, file: File, onProgress: OnProgress): Promise<XMLHttpRequest> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('POST', url)
    const tokens = readTokens()
    if (tokens !== null) xhr.setRequestHeader('Authorization', `Bearer ${tokens.access}`)
    xhr.upload.addEventListener('progress', (e: ProgressEvent) => {
      if (e.lengthComputable && e.total > 0) onProgress(Math.min(1, e.loaded / e.total))
    })
    xhr.addEventListener('load', () => resolve(xhr))
    xhr.addEventListener('error', () => reject(new Error('The upload failed: no answer from the server')))
    xhr.addEventListener('abort', () => reject(new Error('The upload was aborted')))
    const form = new FormData()
    form.append('file', file, file.name)
    xhr.send(form)
  })
}

/** POSTs a file as the multipart field `file`; the answer's JSON, or the API's error thrown. */
async function postFile<T>(path: string, file: File, onProgress: OnProgress): Promise<T> {
  const url = apiUrl(path)
  let xhr = await send(url, file, onProgress)
  if (xhr.status === 401 && (await refreshOnce())) xhr = await send(url, file, onProgress)
  if (xhr.status < 200 || xhr.status >= 300) throw errorFrom(xhr.status, bodyOf(xhr))
  onProgress(1)
  return bodyOf(xhr) as T
}

/** Uploads a file to a workspace; the file made, or the API's error thrown. */
export function uploadFile(workspaceId: string, file: File, onProgress: OnProgress): Promise<WorkspaceFileOut> {
  return postFile(`/api/v1/workspaces/${encodeURIComponent(workspaceId)}/files`, file, onProgress)
}

/** Uploads a chat attachment to a session; its blob ref (for the next message), or the
 * API's error thrown. */
export function uploadAttachment(sessionId: string, file: File, onProgress: OnProgress): Promise<AttachmentOut> {
  return postFile(`/api/v1/sessions/${encodeURIComponent(sessionId)}/attachments`, file, onProgress)
}
