// The chat input's attachments: each file uploads to the session at once (progress on its
// chip), and the next message sends the blob refs of those that finished.
import { reactive } from 'vue'
import type { AttachmentOut, OnProgress } from '@/files/upload'

export interface Chip {
  key: number
  name: string
  size: number
  /** The fraction uploaded, 0 to 1. */
  progress: number
  /** The blob ref once uploaded. */
  ref: string | null
}

export type Upload = (file: File, onProgress: OnProgress) => Promise<AttachmentOut>

/** A file the message names, for showing it: its name and size when this page uploaded it. */
export interface AttachedView {
  ref: string
  name: string
  size: number | null
}

export interface Attachments {
  chips: Chip[]
  /** Every chip uploaded, none still going. */
  readonly ready: boolean
  /** Uploads the files; a refused one is dropped and `onError` hears the API's error. */
  add(files: Iterable<File>): Promise<void>
  remove(key: number): void
  /** The uploaded chips as the sent message shows them, and empties the list. */
  take(): AttachedView[]
}

let counter = 0

export function createAttachments(upload: Upload, onError: (name: string, error: unknown) => void): Attachments {
  const chips = reactive<Chip[]>([])
  const find = (key: number): Chip | undefined => chips.find((c) => c.key === key)

  async function one(file: File): Promise<void> {
    const key = ++counter
    chips.push({ key, name: file.name, size: file.size, progress: 0, ref: null })
    try {
      const made = await upload(file, (f) => {
        const chip = find(key)
        if (chip) chip.progress = f
      })
      const chip = find(key)
      if (chip) {
        chip.ref = made.blob_ref
        chip.progress = 1
      }
    } catch (e) {
      const index = chips.findIndex((c) => c.key === key)
      if (index >= 0) chips.splice(index, 1)
      onError(file.name, e)
    }
  }

  return {
    chips,
    get ready() {
      return chips.every((c) => c.ref !== null)
    },
    async add(files) {
      await Promise.all([...files].map(one))
    },
    remove(key) {
      const index = chips.findIndex((c) => c.key === key)
      if (index >= 0) chips.splice(index, 1)
    },
    take() {
      const done = chips.filter((c) => c.ref !== null).map((c) => ({ ref: c.ref as string, name: c.name, size: c.size }))
      chips.splice(0)
      return done
    },
  }
}
