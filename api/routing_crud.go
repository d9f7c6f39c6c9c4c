package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
)

// routingCRUD is the get, create, update and delete of one routing
// resource (dispatchers, split rules, transformations, condition sets):
// the same HTTP over routing.Service's methods of that resource. The
// resource's list and its other endpoints stay with it.
type routingCRUD[In, Out, J any] struct {
	path   string // "/dispatchers"
	noun   string // "dispatcher", as not_found names it
	decode func(r *http.Request, create bool) (In, error)
	toJSON func(Out) J
	get    func(ctx context.Context, a domain.Actor, id uuid.UUID) (Out, error)
	create func(ctx context.Context, a domain.Actor, in In) (Out, error)
	update func(ctx context.Context, a domain.Actor, id uuid.UUID, in In) (Out, error)
	remove func(ctx context.Context, a domain.Actor, id uuid.UUID) error
}

// mount registers POST path, GET/PATCH/DELETE path/{id}.
func (c routingCRUD[In, Out, J]) mount(s *Server, read, write chi.Router) {
	write.Post(c.path, s.h(c.createOne))
	read.Get(c.path+"/{id}", s.h(c.getOne))
	write.Patch(c.path+"/{id}", s.h(c.updateOne))
	write.Delete(c.path+"/{id}", s.h(c.deleteOne))
}

func (c routingCRUD[In, Out, J]) getOne(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", c.noun)
	if err != nil {
		return err
	}
	out, err := c.get(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, c.toJSON(out))
	return nil
}

func (c routingCRUD[In, Out, J]) createOne(w http.ResponseWriter, r *http.Request) error {
	in, err := c.decode(r, true)
	if err != nil {
		return err
	}
	out, err := c.create(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, c.toJSON(out))
	return nil
}

// updateOne applies the fields sent (the resource's decode says which).
func (c routingCRUD[In, Out, J]) updateOne(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", c.noun)
	if err != nil {
		return err
	}
	in, err := c.decode(r, false)
	if err != nil {
		return err
	}
	out, err := c.update(r.Context(), actorOf(r), id, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, c.toJSON(out))
	return nil
}

func (c routingCRUD[In, Out, J]) deleteOne(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", c.noun)
	if err != nil {
		return err
	}
	if err := c.remove(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
