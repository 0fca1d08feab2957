/* Defaults of the store's settings and the retention of one project
 * (store/options.h). */
#include "store/options.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void store_options_defaults(store_options_t *o)
{
	memset(o, 0, sizeof *o);
	o->engine = xstrdup("local");
}

void store_options_free(store_options_t *o)
{
	char *strs[] = {o->engine, o->url, o->database, o->user, o->password, o->cluster, o->password_file};
	for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
		free(strs[k]);
	memset(o, 0, sizeof *o);
}

void store_retention_defaults(store_retention_options_t *r)
{
	memset(r, 0, sizeof *r);
	r->days = 14;
	r->max_days = 14;
}

void store_retention_free(store_retention_options_t *r)
{
	for (uint32_t i = 0; i < r->n_projects; i++)
		free(r->projects[i].project);
	memset(r, 0, sizeof *r);
}

int store_retention_days(const store_retention_options_t *r, const char *project)
{
	int days = r->days;
	for (uint32_t i = 0; i < r->n_projects; i++)
		if (!strcmp(r->projects[i].project, project))
			days = r->projects[i].days;
	return days > r->max_days ? r->max_days : days;
}
