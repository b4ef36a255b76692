/** The largest page a list answers (CONTRACT section 7), and its default: kept free of schema code for the CLI. */
export const PAGE_MAX = 1000;
