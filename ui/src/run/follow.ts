// Whether the conversation follows new content, pure: the person is "at the bottom" when the last
// few pixels are in view (a fraction of a pixel from zoom, or a line of slack, counts as there).

/** Pixels from the bottom that still count as at the bottom. */
export const BOTTOM_SLACK_PX = 24;

export function atBottom(scrollHeight: number, scrollTop: number, clientHeight: number): boolean {
  return scrollHeight - scrollTop - clientHeight <= BOTTOM_SLACK_PX;
}
