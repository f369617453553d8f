/* receiver.h — the "proflink-intake" thread: receives the profiler's datagrams into the pending
 * ring (pending.h), and does nothing else. Started and owned by the reader (deliverer.c). */
#ifndef PROFLINK_INTAKE_H
#define PROFLINK_INTAKE_H

/* Takes sock_fd as the socket to receive on (made blocking: nobody else uses it). */
void intake_set_socket(int sock_fd);
/* Closes it if the number is still ours (a fork child: the parent's socket; a failed exec:
 * replaced). The thread must not be running. */
void intake_close_socket(void);

/* The thread's body (arg unused). Returns when the socket is unusable, after
 * intake_ended() says why. */
void *intake_main(void *arg);
/* The thread could not be started: the reader winds down as if the socket were unusable. */
void intake_not_started(int err);
/* Any thread: the thread ends before its next receive, with intake_ended() ECANCELED (a blocked
 * receive is woken: the socket receives nothing more). */
void intake_stop(void);
/* The thread's id once it runs, 0 before. */
int intake_thread_id(void);
/* 0 while receiving; the errno that ended it otherwise. */
int intake_ended(void);

/* A fork child: no intake thread, nothing ended. */
void intake_fork_child(void);

#endif
