/* start_path.h — where the code and data of a start that proflink does not serve are placed.
 *
 * proflink may be loaded into every process of a host (docs/speed.md, what a start costs), most
 * of which it does not serve: such a start runs a few functions and touches a few variables,
 * and each page of the library it touches costs a page fault (microseconds on a virtual
 * machine). The functions marked START_PATH_CODE go to the front of the code with the
 * constructor, inside the one window of pages the kernel maps around the first fault there.
 * The variables marked START_PATH_DATA go to .data, whose last page the dynamic loader already
 * writes at every load (it zeroes the rest of that page), instead of a page of the zero-filled
 * data of their own. Placement only: the code generated is the same. */
#ifndef PROFLINK_START_PATH_H
#define PROFLINK_START_PATH_H

#define START_PATH_CODE __attribute__((section(".text.startup")))
#define START_PATH_DATA __attribute__((section(".data.start_path")))

#endif
