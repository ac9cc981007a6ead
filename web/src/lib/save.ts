// Saving bytes the page holds (an object URL) as a file: a link clicked, then let go.

/** Saves the object URL's bytes as `name`, then revokes the URL. */
export function saveObjectUrl(url: string, name: string): void {
  try {
    const link = document.createElement('a')
    link.href = url
    link.download = name
    document.body.append(link)
    link.click()
    link.remove()
  } finally {
    setTimeout(() => URL.revokeObjectURL(url), 0)
  }
}
