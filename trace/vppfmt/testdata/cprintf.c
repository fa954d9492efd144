/* cprintf prints the C-dialect expectations of printf_test.go: for each
 * format and 32-bit datum, what glibc's snprintf renders. Regenerate with
 *   gcc -o /tmp/cprintf cprintf.c && /tmp/cprintf > cprintf.golden
 * Integer conversions get the datum as the C type their length modifier
 * names, zero-extended from 32 bits, as the Go formatter treats it. */
#include <stdio.h>
#include <string.h>

static const char *intfmts[] = {
  "%d", "%i", "%u", "%x", "%X", "%o",
  "%5d", "%-5d|", "%05d", "%+d", "% d", "%+5d", "%-+5d|", "%.3d", "%8.3d", "%-8.3d|", "%08.3d", "%.0d", "%5.0d|",
  "%#x", "%#X", "%#o", "%#8x", "%#08x", "%-#8x|", "%08x", "0x%08x", "%.8x", "%#.8x", "%#.0x", "%#.0o",
  "%10u", "%-10u|", "%010u", "%.12u", "%+u", "% u", "% 05d", "%+05d",
  "%hd", "%hu", "%hx", "%hhd", "%hhu", "%hhx", "%ld", "%lu", "%lx", "%lld", "%llx", "%zu", "%zx", "%Lu",
  "len %u", "vector %d", "a%db", "%c", "%3c|", "%-3c|", "%p", "%20p|", "%-20p|", "%%", "100%% %d", "%5%",
  0
};
static const unsigned vals[] = { 0, 1, 7, 42, 255, 4096, 7515, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x404bbe, 65 };

static void line(const char *f, unsigned v, const char *out) {
  printf("%s\t%u\t%s\n", f, v, out);
}

int main(void) {
  char buf[256];
  for (int i = 0; intfmts[i]; i++) {
    const char *f = intfmts[i];
    for (unsigned j = 0; j < sizeof vals / sizeof vals[0]; j++) {
      unsigned v = vals[j];
      const char *l = strpbrk(f, "diuxXocp%");
      if (strchr(f, 'p')) {
        snprintf(buf, sizeof buf, f, (void *)(unsigned long)v);
      } else if (strstr(f, "%ll") || strstr(f, "%l") || strstr(f, "%z") || strstr(f, "%L")) {
        snprintf(buf, sizeof buf, f, (unsigned long)v);
      } else {
        snprintf(buf, sizeof buf, f, v);
      }
      (void)l;
      if (strchr(f, 'c') && (v & 0xff) == 0) continue; /* NUL ends a C string; we drop it */
      line(f, v, buf);
    }
  }
  return 0;
}
