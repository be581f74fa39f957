/* The pod sandbox's pause process: holds the pod's namespaces, reaps orphans
   (it is PID 1 when the pod shares its PID namespace) and exits 0 on
   SIGTERM/SIGINT. Built -static so its image needs no libc. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction quit = {.sa_handler = stop}, child = {.sa_handler = reap};
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGINT, &quit, NULL) || sigaction(SIGTERM, &quit, NULL) ||
      sigaction(SIGCHLD, &child, NULL))
    return 1;
  for (;;) pause();
}
