// A minimal Server-Sent Events parser: feeds text chunks, emits complete events.
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export class SseParser {
  #buffer = '';
  #event = '';
  #data: string[] = [];
  #id: string | undefined;

  constructor(
    private readonly emit: (event: SseEvent) => void,
    /** Comment lines, without the colon (the daemon says why it ends a stream in one: `ended: <reason>`). */
    private readonly comment: (text: string) => void = () => undefined,
  ) {}

  push(chunk: string): void {
    this.#buffer += chunk;
    let newline: number;
    while ((newline = this.#buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = this.#buffer.slice(0, newline);
      const length = this.#buffer.startsWith('\r\n', newline) ? 2 : 1;
      this.#buffer = this.#buffer.slice(newline + length);
      this.#line(line);
    }
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length) this.emit({ event: this.#event || 'message', data: this.#data.join('\n'), id: this.#id });
      this.#event = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return this.comment(line.slice(1).trimStart()); // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id') this.#id = value;
  }
}
